"""``failover serve``: every agent and workflow of a chain file behind one OpenAI- and
Anthropic-compatible HTTP endpoint, so any client in any language gets failover.

``build_app`` gives the :mod:`aiohttp` application (for embedding or tests);
``failover serve CHAIN`` (see :mod:`providers.serve.command`) runs it. The names load
on first use (PEP 562), so registering the command (``failover --help``) does not
import the server.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from providers.serve.app import build_app
    from providers.serve.auth import GatewayKeys, hash_key
    from providers.serve.models import Models
    from providers.serve.settings import GatewaySettings

_LAZY = {
    "build_app": "providers.serve.app",
    "GatewayKeys": "providers.serve.auth",
    "hash_key": "providers.serve.auth",
    "Models": "providers.serve.models",
    "GatewaySettings": "providers.serve.settings",
}

__all__ = ["GatewayKeys", "GatewaySettings", "Models", "build_app", "hash_key"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'providers.serve' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
