"""The script-file format of the simulated server: route -> faults, plus defaults.

See ``providers.simulator`` for the format; :func:`load_script` reads a file,
:func:`parse_script` checks already-decoded JSON (also used by ``POST /_sim/script``);
:func:`fault_from_spec` builds one fault from its JSON form (``Fault.from_spec``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from providers.simulator.faults import ERROR_KINDS, Fault

__all__ = [
    "FAULT_FACTORIES",
    "ROUTES",
    "check_route",
    "fault_from_spec",
    "load_script",
    "parse_script",
]

ROUTES = (
    "openai",
    "responses",
    "anthropic",
    "gemini",
    "http",
    "azure",
    "bedrock",
    "vertex_anthropic",
    "vertex_gemini",
)


#: The script-file name of every fault factory: ``{"status": 503}`` calls ``Fault.status(503)``.
FAULT_FACTORIES: dict[str, Any] = {
    name: getattr(Fault, name)
    for name in (
        "ok",
        "content_filter",
        "no_prefill",
        *sorted(ERROR_KINDS),
        "hang",
        "delay",
        "first_token",
        "stall",
        "latency",
        "flaky",
        "invalid_json",
        "missing_field",
        "cut_stream",
        "stream_error",
        "oversized",
        "endless",
    )
}


def fault_from_spec(spec: Mapping[str, Any] | str) -> Fault:
    """Build a fault from its JSON form: ``{"<factory>": <arg>, **kwargs}``.

    ``<arg>`` is null/true/{} (no argument), a scalar (the first positional
    argument, e.g. ``{"status": 503}``, ``{"ok": "hello"}``, ``{"delay": 0.5}``)
    or an object of keyword arguments (``{"ok": {"text": "hi", "chunks": 2}}``).
    Other keys are keyword arguments: ``{"status": 503, "headers": {...}}``,
    ``{"delay": 0.2, "then": {"ok": "late"}}``. Nested faults (``then``,
    ``fault``, ``otherwise``) are specs too; ``usage`` is ``[input, output]``.
    A bare string names a factory with no argument: ``"hang"``.
    """
    if isinstance(spec, str):
        spec = {spec: None}
    if not isinstance(spec, Mapping):
        raise ValueError(f'fault spec: expected an object like {{"status": 503}}, got {spec!r}')
    names = [k for k in spec if k in FAULT_FACTORIES]
    if len(names) != 1:
        raise ValueError(
            f"fault spec {dict(spec)!r}: needs exactly one factory key, one of "
            f"{sorted(FAULT_FACTORIES)}"
        )
    name = names[0]
    arg = spec[name]
    kwargs: dict[str, Any] = {k: v for k, v in spec.items() if k != name}
    args: list[Any] = []
    if isinstance(arg, Mapping):
        kwargs.update(arg)
    elif arg is not None and arg is not True:
        args.append(arg)
    for key in ("then", "fault", "otherwise", "error"):
        if key in kwargs and kwargs[key] is not None:
            kwargs[key] = fault_from_spec(kwargs[key])
    if "usage" in kwargs and kwargs["usage"] is not None:
        kwargs["usage"] = tuple(kwargs["usage"])
    try:
        fault: Fault = FAULT_FACTORIES[name](*args, **kwargs)
    except TypeError as exc:
        raise ValueError(f"fault spec {dict(spec)!r}: bad arguments for {name}: {exc}") from exc
    return fault


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
            defaults = {check_route(r): fault_from_spec(s) for r, s in value.items()}
        else:
            if not isinstance(value, list):
                raise ValueError(f"{key!r} must be a list of fault specs, got {value!r}")
            scripts[check_route(key)] = [fault_from_spec(s) for s in value]
    return scripts, defaults


def load_script(path: str | Path) -> tuple[dict[str, list[Fault]], dict[str, Fault]]:
    """Read a script file: ``(route -> faults, route -> default fault)``."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from exc
    return parse_script(data)
