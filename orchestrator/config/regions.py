"""The ``regions:`` shorthand: one provider entry, one provider per region, in order.

``claude: {type: vertex_anthropic, model: ..., regions: [us-east5, europe-west1]}``
declares ``claude@us-east5`` and ``claude@europe-west1``, each the entry with the
type's region field set to one value (:func:`region_field`: ``location`` for Vertex
AI, ``resource`` for Azure OpenAI, ``region`` where a spec has that field); an agent
listing ``claude`` gets them all, in that order. An empty list, a duplicate, a value
that is not a name, the region field given too, or a type with no region field is a
chain-file error located at the list or its item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.config.problems import Path, Problem
from orchestrator.config.scrub import EnvValues
from orchestrator.config.source import Source
from orchestrator.config.spec import ProviderSpec

__all__ = ["MAX_REGIONS", "Child", "at_region", "expand", "region_field"]

#: Regions one entry may list (a chain file is hostile input too).
MAX_REGIONS = 64
#: ``(provider name, entry, index in regions:)``; the index is None without ``regions:``.
Child = tuple[str, dict[str, Any], int | None]


def region_field(spec: type[ProviderSpec]) -> str | None:
    """The field ``regions:`` sets for ``spec``: its declared ``region_field``, else its
    ``region`` or ``location`` field; None when it has none (no ``regions:``)."""
    if spec.region_field is not None:
        return spec.region_field
    return next((f for f in ("region", "location") if f in spec.model_fields), None)


def expand(
    src: Source,
    env: EnvValues,
    name: str,
    entry: Mapping[str, Any],
    spec: type[ProviderSpec],
    out: list[Problem],
) -> list[Child]:
    """Provider ``name``'s entries: itself without ``regions:``, else one per region
    (``name@region``); problems go to ``out`` (and then no entry is returned)."""
    if "regions" not in entry:
        return [(name, dict(entry), None)]
    where: Path = ("providers", name, "regions")
    field = region_field(spec)
    regions = entry["regions"]
    problem = _list_problem(entry, field, regions)
    if problem is not None:
        out.append(src.problem(where, problem))
        return []
    assert field is not None and isinstance(regions, list)  # checked by _list_problem
    rest = {k: v for k, v in entry.items() if k != "regions"}
    seen: dict[str, int] = {}
    children: list[Child] = []
    for i, value in enumerate(regions):
        at: Path = (*where, i)
        shown = env.show(at, value)
        if not isinstance(value, str) or not value.strip():
            out.append(src.problem(at, f"{shown} is not a {field} name"))
        elif value in seen:
            first = f"first at regions[{seen[value]}]"
            out.append(src.problem(at, f"{shown} is listed twice ({first}); list each once"))
        else:
            seen[value] = i
            children.append((f"{name}@{value}", {**rest, field: value}, i))
    return children if len(children) == len(regions) else []


def _list_problem(entry: Mapping[str, Any], field: str | None, regions: Any) -> str | None:
    """What is wrong with ``regions:`` as a whole, or None."""
    if field is None:
        return (
            f"type {entry.get('type')!r} has no region or location field; "
            "declare one provider per endpoint instead"
        )
    if field in entry:
        return f"give {field}: or regions:, not both"
    if not isinstance(regions, list):
        return f"expected a list of {field} values, e.g. regions: [a, b]"
    if not regions:
        return f"is empty; give at least one {field}"
    if len(regions) > MAX_REGIONS:
        return f"lists {len(regions)} values; at most {MAX_REGIONS}"
    return None


def at_region(src: Source, problems: list[Problem], field: str | None, at: Path) -> list[Problem]:
    """``problems`` of one region's entry, those about its region field moved to ``at``
    (its item in ``regions:``, where the value was written)."""
    if len(at) < 4:
        return problems
    return [
        Problem(src.file, src.locate(at), at, p.message) if p.path[2:3] == (field,) else p
        for p in problems
    ]
