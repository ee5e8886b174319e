"""The one JSON loader for documents from the network: strict, bounded, linear time.

Every reply body, stream event and error body an HTTP provider reads goes
through :func:`parse_json`. Plain ``json.loads`` accepts ``NaN``, ``Infinity``
and ``1e999`` (an ``inf`` that later fails ``int()`` with ``OverflowError``) and
recurses once per nesting level (``RecursionError`` on ``[[[[...``).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "parse_json"]

MAX_JSON_DEPTH = 512
"""Deepest nesting of arrays and objects accepted in a document from the network (real
replies nest a few dozen levels; the C parser's own limit is the interpreter's stack)."""

# A string, or an unterminated one up to the end: the match never fails once it has
# started at a quote, so no quote is scanned twice (a failing match restarted at each
# escaped quote of an unclosed string, which took quadratic time).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKETS = bytes(range(256)).translate(None, b"[]{}")  # every byte but the four brackets
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def _too_deep(data: bytes) -> bool:
    """True when ``data`` nests arrays/objects deeper than :data:`MAX_JSON_DEPTH`.

    Linear time and no recursion: cut out strings (brackets in text are not
    nesting), keep only brackets, and take the highest running depth.
    """
    shape = _STRING.sub(b"", data).translate(None, _BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, shape)), default=0) > MAX_JSON_DEPTH


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf - inf and nan - nan are nan
        raise ValueError(f"number out of range: {text[:20]}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)


def parse_json(data: bytes | str) -> Any:
    """Parse a document from the network, strictly: ``ValueError`` when it is not JSON,
    nests deeper than :data:`MAX_JSON_DEPTH`, or holds ``NaN``, ``Infinity`` or a number
    that overflows a float (``1e999``), so no ``int(inf)`` can fail later.

    Every document read from upstream goes through here (reply, stream event, error body).
    """
    if isinstance(data, bytes):
        text = data.decode(json.detect_encoding(data), "surrogatepass")  # as json.loads does
    else:
        text = data
    # Counting brackets is C-speed; only a document with many of them is scanned.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _too_deep(
        text.encode("utf-8", "surrogatepass")
    ):
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return _DECODER.decode(text)
    except RecursionError:  # cannot happen after the scan; kept so nothing else escapes
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
