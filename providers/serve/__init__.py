"""``failover serve``: every agent and workflow of a chain file behind one OpenAI- and
Anthropic-compatible HTTP endpoint, so any client in any language gets failover.

``build_app`` gives the :mod:`aiohttp` application (for embedding or tests);
``failover serve CHAIN`` (see :mod:`providers.serve.command`) runs it.
"""

from __future__ import annotations

from providers.serve.app import build_app
from providers.serve.auth import GatewayKeys, hash_key
from providers.serve.models import Models
from providers.serve.settings import GatewaySettings

__all__ = ["GatewayKeys", "GatewaySettings", "Models", "build_app", "hash_key"]
