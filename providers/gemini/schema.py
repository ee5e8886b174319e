"""JSON Schema (as pydantic writes it) to Gemini's ``responseSchema`` dialect.

Gemini's schema is an OpenAPI 3.0 subset: no ``$ref``/``$defs``, no
``additionalProperties``, ``title``, ``default`` or ``const``; nullability is
``nullable: true`` rather than a ``null`` type; type names are upper case.
:func:`gemini_schema` inlines references, folds ``null`` alternatives into
``nullable``, turns ``const`` into a one-value ``enum`` and drops every key the
dialect does not accept. Validation of the reply still happens against the
original schema (pydantic), so dropping a constraint only loosens the hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["gemini_schema"]

_KEEP = {
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "propertyOrdering",
}
_TYPES = {"string", "number", "integer", "boolean", "array", "object"}
_MAX_DEPTH = 32


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemini ``responseSchema`` for a JSON schema (``$defs`` refs inlined)."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _convert(schema, defs, 0)


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    target = defs.get(ref.rsplit("/", 1)[-1])
    if not isinstance(target, Mapping):
        return {k: v for k, v in node.items() if k != "$ref"}
    # Sibling keys (a field's description next to its $ref) win over the definition's.
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _convert(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:  # a recursive model: Gemini cannot express it, stop hinting here
        return {"type": "OBJECT"}
    node = _resolve(node, defs)
    out: dict[str, Any] = {}
    nullable = False
    kind = node.get("type")
    if isinstance(kind, list):
        nullable = "null" in kind
        kind = next((k for k in kind if k != "null"), None)
    variants = node.get("anyOf") or node.get("oneOf")
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
        merged = {**_resolve(all_of[0], defs), **{k: v for k, v in node.items() if k != "allOf"}}
        return _convert(merged, defs, depth + 1)
    if isinstance(variants, list):
        real = [v for v in variants if isinstance(v, Mapping) and v.get("type") != "null"]
        nullable = nullable or len(real) < len(variants)
        if len(real) == 1:
            extra = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
            out = _convert({**_resolve(real[0], defs), **extra}, defs, depth + 1)
            if nullable:
                out["nullable"] = True
            return out
        out["anyOf"] = [_convert(v, defs, depth + 1) for v in real]
    if "const" in node:
        node = {**node, "enum": [node["const"]]}
        kind = kind or _json_type(node["const"])
    if isinstance(kind, str) and kind in _TYPES:
        out["type"] = kind.upper()
    for key, value in node.items():
        if key not in _KEEP or key in ("type", "anyOf"):
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {
                name: _convert(sub, defs, depth + 1)
                for name, sub in value.items()
                if isinstance(sub, Mapping)
            }
        elif key == "items" and isinstance(value, Mapping):
            out[key] = _convert(value, defs, depth + 1)
        elif key == "enum":
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                out[key] = list(value)
                out["type"] = "STRING"
        else:
            out[key] = value
    if nullable:
        out["nullable"] = True
    return out


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None
