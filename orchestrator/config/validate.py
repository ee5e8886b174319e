"""Validate expanded chain-file data with pydantic; turn its errors into located problems.

pydantic's messages ("Input should be 'a', 'b' or 'c'") are rewritten into the
house shape: the field path, the bad value and what is allowed, on the
line the value was written. Values that came from the environment or sit in
a secret field are never printed. Each provider entry is validated by the
spec its ``type`` registered (see ``registry``), the rest by ``FileSpec``.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from orchestrator.config import registry
from orchestrator.config.problems import ConfigError, Path, Problem
from orchestrator.config.regions import at_region, expand, region_field
from orchestrator.config.schema import ChainSpec, FileSpec
from orchestrator.config.scrub import EnvValues
from orchestrator.config.source import Source
from orchestrator.config.spec import ProviderSpec
from orchestrator.keywords import did_you_mean

__all__ = ["validate"]


def validate(src: Source, env: EnvValues) -> ChainSpec:
    """The file's specs from the expanded data; ``ConfigError`` listing every problem.

    The file's own shape is checked by ``FileSpec``; each provider entry by
    the spec its ``type`` registered (so only the types used are imported).
    """
    data = env.data
    problems: list[Problem] = []
    try:
        file = FileSpec.model_validate(data)
    except ValidationError as exc:
        file = None
        problems += _problems(src, env, exc, FileSpec, data, ())
    providers: dict[str, ProviderSpec] = {}
    groups: dict[str, tuple[str, ...]] = {}
    origins: dict[str, Path] = {}
    raw = data.get("providers")
    raw = raw if isinstance(raw, Mapping) else {}
    for name, entry in raw.items():
        if isinstance(name, str) and name and isinstance(entry, Mapping):
            specs = _provider(src, env, name, entry, problems, set(raw), origins)
            providers.update(specs)
            if "regions" in entry:
                groups[name] = tuple(specs)
    if problems or file is None:
        problems.sort(key=lambda p: p.line if p.line is not None else 1 << 30)
        raise ConfigError(problems)
    return ChainSpec(
        providers, file.agents, file.workflows, file.gateway, file.journal, groups, origins
    )


def _provider(
    src: Source,
    env: EnvValues,
    name: str,
    entry: Mapping[str, Any],
    out: list[Problem],
    taken: set[str],
    origins: dict[str, Path],
) -> dict[str, ProviderSpec]:
    """Provider ``name``'s entry validated by its type's spec: one spec, or one per region
    (``regions:``; each one's list item goes to ``origins``); problems go to ``out``."""
    where: Path = ("providers", name, "type")
    kind = entry.get("type")
    if "type" not in entry:
        out.append(src.problem(where, f"is required but missing; give one of {registry.listing()}"))
        return {}
    if not isinstance(kind, str) or kind not in registry.names():
        shown = env.show(where, kind)
        out.append(src.problem(where, f"{shown} is not one of {registry.listing()}"))
        return {}
    try:
        spec = registry.load(kind)
    except ImportError as exc:
        message = f"type {kind!r} needs a module that cannot be imported here: {exc}"
        out.append(src.problem(where, message))
        return {}
    except Exception as exc:
        out.append(src.problem(where, f"type {kind!r} cannot be loaded: {exc}"))
        return {}
    assert spec is not None  # kind is a registered name
    specs: dict[str, ProviderSpec] = {}
    for child, data, index in expand(src, env, name, entry, spec, out):
        at: Path = where[:2] if index is None else (*where[:2], "regions", index)
        if index is not None and child in taken:
            shown = env.show(at, data.get(region_field(spec) or ""))
            out.append(src.problem(at, f"{shown} names {child}, another provider's name too"))
            continue
        try:
            specs[child] = spec.model_validate(data)
        except ValidationError as exc:
            found = _problems(src, env, exc, spec, data, where[:2])
            out += [p for p in at_region(src, found, region_field(spec), at) if p not in out]
        origins[child] = at
    return specs


def _problems(
    src: Source,
    env: EnvValues,
    exc: ValidationError,
    root: type[BaseModel],
    data: Any,
    prefix: Path,
) -> list[Problem]:
    """pydantic's errors for ``data`` (validated by ``root``, found at ``prefix``) as problems."""
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        problem = _problem(src, env, err, root, data, prefix)
        if problem not in out:
            out.append(problem)
    return out


def _clean_loc(data: Any, loc: tuple[str | int, ...]) -> Path:
    """Drop pydantic's union-tag components (``'openai'``, ``'<mapping>'``) that are not in
    the data."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(part, str) and part.startswith("<"):
            continue  # a tagged member of a union, as schema types name them
        if isinstance(node, Mapping):
            if part not in node and node.get("type") == part:
                continue
            node = node.get(part) if isinstance(part, str) else None
        elif isinstance(node, list) and isinstance(part, int):
            node = node[part] if 0 <= part < len(node) else None
        else:
            node = None
        out.append(part)
    return tuple(out)


def _quoted(value: Any, shown: str, expected: str) -> str:
    """`` (write it without quotes)`` when a string holds what the field wants."""
    if not isinstance(value, str) or not shown.startswith(("'", '"')):
        return ""
    text = value.strip()
    if expected == "bool":
        ok = text in ("true", "false")
    else:
        ok = re.fullmatch(r"-?\d+" if expected == "int" else r"-?\d+(?:\.\d+)?", text) is not None
    return f" (it is a string; write {text} without quotes)" if ok else ""


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _expected(text: str) -> str:
    """``"'a', 'b' or 'c'"`` -> ``"a, b, c"``."""
    return text.replace("'", "").replace(" or ", ", ")


#: pydantic's bound errors: the operator a message names, and the ctx key of the bound.
_BOUNDS = {
    "greater_than_equal": (">=", "ge"),
    "greater_than": (">", "gt"),
    "less_than_equal": ("<=", "le"),
    "less_than": ("<", "lt"),
}


def _problem(
    src: Source, env: EnvValues, err: ErrorDetails, root: type[BaseModel], data: Any, at: Path
) -> Problem:
    rel = _clean_loc(data, tuple(err["loc"]))
    path = (*at, *rel)
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    shown = env.show(path, value)
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, data, rel[:-1])
        hint = did_you_mean(str(path[-1]), allowed)
        message = f"unknown key{hint}; allowed here: {', '.join(allowed)}"
    elif kind == "missing":
        message = "is required but missing"
    elif kind == "literal_error":
        message = f"{shown} is not one of {_expected(str(ctx.get('expected', '')))}"
    elif kind == "value_problem":
        message = f"{shown} {env.scrub(str(ctx.get('problem', err['msg'])), at)}"
    elif kind == "string_pattern_mismatch":
        message = f"{shown} is not an import path; write 'package.module:name'"
    elif kind == "value_error":
        # A spec's own words may quote a value, which may hold a secret (value_problem too).
        message = env.scrub(str(ctx.get("error", err["msg"])), at)
    elif kind in _BOUNDS:
        op, key = _BOUNDS[kind]
        bound = ctx.get(key)
        bound = f"{bound:g}" if isinstance(bound, int | float) else bound
        message = f"{shown} is not allowed; use a number {op} {bound}"
    elif kind == "too_short":
        message = f"is empty; give at least {ctx.get('min_length', 1)}"
    elif kind in ("int_parsing", "int_type", "int_from_float"):
        message = f"{shown} is not a whole number{_quoted(value, shown, 'int')}"
    elif kind in ("float_parsing", "float_type"):
        message = f"{shown} is not a number{_quoted(value, shown, 'float')}"
    elif kind in ("bool_parsing", "bool_type"):
        message = f"{shown} is not true or false{_quoted(value, shown, 'bool')}"
    elif kind == "string_type":
        message = f"{shown} is {_kind(value)}; expected a string"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        message = f"expected a mapping (key: value), got {_kind(value)}"
    elif kind == "list_type":
        message = f"expected a list, got {_kind(value)}"
    elif kind in ("tuple_type", "too_long") or (len(path) > 1 and path[-2] == "price"):
        if len(path) > 1 and isinstance(path[-1], int):
            path = path[:-1]
        message = "expected [usd_per_1M_input_tokens, usd_per_1M_output_tokens], two numbers >= 0"
    else:
        message = f"{shown}: {err['msg']}"
    return src.problem(path, message)


def _allowed_keys(root: type[BaseModel], data: Any, path: Path) -> list[str]:
    """The keys the model at ``path`` accepts (walking ``root``'s annotations)."""
    tp: Any = root
    node = data
    for part in path:
        tp = _unwrap(tp, node)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return []
            tp = field.annotation
        elif get_origin(tp) in (dict, list):
            tp = get_args(tp)[-1]
        else:
            return []
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    tp = _unwrap(tp, node)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return sorted(tp.model_fields)
    return []


def _unwrap(tp: Any, node: Any) -> Any:
    """Strip Annotated/Optional; pick a tagged union's member by the data's ``type``."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [
                get_args(a)[0] if get_origin(a) is Annotated else a
                for a in get_args(tp)
                if a is not type(None)
            ]
            tag = node.get("type") if isinstance(node, Mapping) else None
            chosen = [
                m
                for m in members
                if isinstance(m, type)
                and issubclass(m, BaseModel)
                and "type" in m.model_fields
                and get_args(m.model_fields["type"].annotation) == (tag,)
            ]
            if not chosen and isinstance(node, Mapping):  # a mapping picks the model member
                chosen = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
            tp = chosen[0] if chosen else members[0]
        else:
            return tp
