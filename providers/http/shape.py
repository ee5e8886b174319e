"""Reading a vendor's reply: the errors a reply of the wrong shape raises, token
counts, field paths and the checks on stream events and schema names.

Vendor modules read every reply field through these, so a reply of the wrong
shape is one of :data:`BAD_SHAPE`, which :class:`~providers.http.base.VendorProvider`
turns into ``InvalidOutput``.
"""

from __future__ import annotations

import re
from typing import Any

from providers.http.safe_json import parse_json

__all__ = ["BAD_SHAPE", "MAX_TOKENS", "Missing", "dig", "schema_name", "tokens", "whole_event"]


class Missing(Exception):
    """A field the wire format requires is absent (turned into ``InvalidOutput``)."""


BAD_SHAPE = (
    Missing,
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
)
"""What reading a reply of the wrong shape raises (``int("n/a")``, ``"str".get``,
``int(1e308 * 10)``...): providers catch these around parsing and raise
``InvalidOutput`` for them."""

MAX_TOKENS = 2**53
"""Token counts at or past this are not counts (and would lose precision as floats)."""


def tokens(value: Any) -> int:
    """A token count from a reply (``None``/absent is 0); ``ValueError`` unless it is a
    whole number in ``0..MAX_TOKENS``, so costs computed from it stay finite."""
    count = int(value or 0)
    if not 0 <= count < MAX_TOKENS:
        raise ValueError(f"token count {str(count)[:20]} is out of range")
    return count


def dig(data: Any, *path: str | int, what: str = "reply") -> Any:
    """``data[path[0]][path[1]]...``; raises :class:`Missing` naming the path when absent
    (or None); ``what`` names the document in the message ("reply", "stream event")."""
    node = data
    for i, step in enumerate(path):
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            node = None
        if node is None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[: i + 1])
            raise Missing(f"{what} has no {where.lstrip('.')}") from None
    return node


def whole_event(data: str) -> bool:
    """True when an event's data is complete: valid JSON or the ``[DONE]`` marker."""
    if data == "[DONE]":
        return True
    try:
        parse_json(data)
    except ValueError:
        return False
    return True


def schema_name(name: str | None) -> str:
    """A vendor-safe tool/schema name (``[a-zA-Z0-9_-]{1,64}``), default ``"response"``."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name or "")[:64]
    return cleaned or "response"
