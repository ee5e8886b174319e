"""Settings the library would otherwise ignore in silence: each one is an :class:`IgnoredSetting`.

A setting that cannot take effect (``max_hedges`` without ``hedge_after``, a tool
schema keyword no validator or provider knows) is a warning that names the
fix, never a quiet no-op. Filter them as any warning:
``warnings.simplefilter("error", IgnoredSetting)`` makes them errors.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from orchestrator.keywords import did_you_mean

__all__ = ["IgnoredSetting", "unknown_schema_keywords", "warn_ignored"]


class IgnoredSetting(UserWarning):
    """A setting that has no effect where it was given; the message says what to do."""


def warn_ignored(message: str, *, stacklevel: int = 2, remembered: bool = True) -> None:
    """Warn with :class:`IgnoredSetting`, located ``stacklevel`` frames above the caller.

    ``remembered`` False for messages built from a request (a gateway's client): Python
    keeps one registry entry per distinct message, so those skip the registry (no growth
    under hostile input) and are not deduplicated by it.
    """
    if remembered:
        warnings.warn(message, IgnoredSetting, stacklevel=stacklevel + 1)
    else:
        warnings.warn_explicit(message, IgnoredSetting, "<request>", 0, module="orchestrator")


#: Every JSON Schema keyword (drafts 4 to 2020-12) beyond the validating ones jsonschema
#: lists, and the vendors' own (Gemini's ``nullable`` and ``propertyOrdering``).
_ANNOTATIONS = frozenset(
    {
        "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor",
        "$recursiveRef", "$vocabulary", "$comment", "$defs", "definitions", "title",
        "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
        "contentMediaType", "contentEncoding", "contentSchema", "then", "else",
        "dependencies", "additionalItems", "nullable", "propertyOrdering",
    }
)  # fmt: skip
#: Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE = frozenset(
    {
        "additionalProperties", "items", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems",
        "contentSchema",
    }
)  # fmt: skip
_MANY = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NAMED = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
#: How many unknown keywords one message lists, and how much of each it shows.
_LISTED, _SHOWN = 5, 40


def unknown_schema_keywords(schema: Any, known: frozenset[str]) -> list[str]:
    """Each keyword of ``schema`` (and of its subschemas) in neither ``known`` nor the
    annotations, with a close known keyword when there is one: ``'propertes' (did you
    mean 'properties'?)``. Iterative and bounded: at most five are listed."""
    vocabulary = known | _ANNOTATIONS
    found: list[str] = []
    stack = [schema]
    while stack and len(found) < _LISTED:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            if not isinstance(key, str) or key.startswith("x-"):
                continue  # x-...: an extension, on purpose
            if key not in vocabulary:
                shown = key[:_SHOWN]
                found.append(repr(shown) + did_you_mean(shown, vocabulary))
            elif key in _ONE:
                stack.append(value)
            elif key in _MANY and isinstance(value, list):
                stack.extend(value)
            elif key in _NAMED and isinstance(value, Mapping):
                stack.extend(value.values())
    return found[:_LISTED]
