"""The script-file format of the simulated server: route -> faults, plus defaults.

See ``providers.simulated`` for the format; :func:`load_script` reads a file,
:func:`parse_script` checks already-decoded JSON (also used by ``POST /_sim/script``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from providers.simulated.faults import Fault

__all__ = ["ROUTES", "check_route", "load_script", "parse_script"]

ROUTES = ("openai", "responses", "anthropic", "gemini", "http", "azure")


def check_route(route: str) -> str:
    """``route`` itself when it is one of :data:`ROUTES`, else a ValueError naming them."""
    if route not in ROUTES:
        raise ValueError(f"route {route!r} is not one of {', '.join(ROUTES)}")
    return route


def parse_script(data: Any) -> tuple[dict[str, list[Fault]], dict[str, Fault]]:
    """Scripts and defaults from the script-file JSON (see the module docstring)."""
    if not isinstance(data, Mapping):
        raise ValueError('expected a JSON object like {"openai": [{"status": 503}]}')
    scripts: dict[str, list[Fault]] = {}
    defaults: dict[str, Fault] = {}
    for key, value in data.items():
        if key == "defaults":
            if not isinstance(value, Mapping):
                raise ValueError('"defaults" must map a route to one fault spec')
            defaults = {check_route(r): Fault.from_spec(s) for r, s in value.items()}
        else:
            if not isinstance(value, list):
                raise ValueError(f"{key!r} must be a list of fault specs, got {value!r}")
            scripts[check_route(key)] = [Fault.from_spec(s) for s in value]
    return scripts, defaults


def load_script(path: str | Path) -> tuple[dict[str, list[Fault]], dict[str, Fault]]:
    """Read a script file: ``(route -> faults, route -> default fault)``."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from exc
    return parse_script(data)
