"""Provider types by name, from the ``failover.providers`` entry-point group.

This project registers its own types there (``openai``, ``http``, ``codex``...)
the same way a third-party package adds ``type: mycorp``, so the core never
imports a provider module by name. Names are read once from the installed
distributions' metadata; a type's module is imported only when a chain file
uses it. :func:`clear` forgets both (for tests that install a distribution).
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points

from orchestrator.config.spec import ProviderSpec

__all__ = ["GROUP", "NotAProviderType", "clear", "listing", "load", "names"]

#: The entry-point group a distribution declares its provider types in.
GROUP = "failover.providers"


class NotAProviderType(TypeError):
    """An entry point in :data:`GROUP` that does not name a :class:`ProviderSpec` subclass."""


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    # The first distribution on sys.path to claim a name wins, as for imports.
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)
    return found


def names() -> tuple[str, ...]:
    """Every registered type name (nothing is imported)."""
    return tuple(_entry_points())


def listing() -> str:
    """Every registered type name, for an error message: by each spec's ``order``, then
    by name. This imports every type's module, so it is only for the error path; a
    type that cannot be loaded is listed last."""

    def key(name: str) -> tuple[int, str]:
        try:
            spec = load(name)
        except Exception:
            spec = None
        return (spec.order if spec is not None else 1 << 30, name)

    return ", ".join(sorted(names(), key=key))


@functools.cache
def load(name: str) -> type[ProviderSpec] | None:
    """The spec class registered as ``name`` (importing its module), or None when none is.

    Raises what importing the module raises, and :class:`NotAProviderType`
    when the entry point names something else.
    """
    ep = _entry_points().get(name)
    if ep is None:
        return None
    spec = ep.load()
    if not (isinstance(spec, type) and issubclass(spec, ProviderSpec)):
        raise NotAProviderType(
            f"entry point {ep.value!r} names a {type(spec).__name__}, not a ProviderSpec subclass"
        )
    return spec


def clear() -> None:
    """Forget the registered names and loaded types (read them again on next use)."""
    _entry_points.cache_clear()
    load.cache_clear()
