"""The one JSON loader for documents from the network: strict, bounded, linear time.

Every reply body, stream event and error body an HTTP provider reads goes
through :func:`parse_json`. Plain ``json.loads`` accepts ``NaN``, ``Infinity``
and ``1e999`` (an ``inf`` that later fails ``int()`` with ``OverflowError``) and
recurses once per nesting level (``RecursionError`` on ``[[[[...``).

What parsing costs is bounded too, not only the bytes: 31 KB of gzip inflate to
31 MiB of ``[],[],...``, ten million lists (900 MB and seconds of CPU, all of it
inside one C call that holds the event loop). A document may hold at most
:data:`MAX_JSON_TOKENS` structural tokens (``[ ] { } , :`` outside strings),
counted before parsing by a linear, string-aware scan, so the worst document
accepted costs a bounded number of objects whatever its size in bytes; a
legitimate reply near the byte cap is mostly string text and has few tokens.

A document within those bounds is parsed by orjson (Rust, 3-4x the stdlib's speed) when
its answer is provably the stdlib's: UTF-8 with no run of 19 digits (so every integer
fits in 64 bits, which orjson would otherwise turn into a float); whatever orjson refuses
(a BOM, a lone surrogate, ``NaN``, ``1e999``, invalid JSON) goes the stdlib's way, which
accepts or refuses it, with its reason, as it always has.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

import orjson

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_JSON_TOKENS",
    "dumps_if_exact",
    "json_body",
    "parse_json",
    "replace_lone_surrogates",
]

MAX_JSON_DEPTH = 512
"""Deepest nesting of arrays and objects accepted in a document from the network (real
replies nest a few dozen levels; the C parser's own limit is the interpreter's stack)."""

MAX_JSON_TOKENS = 1 << 20
"""Most structural tokens (``[ ] { } , :`` outside strings) a document from the network
may hold: 1,048,576, so at most about a million values and keys. A value costs the
parser 30-100 bytes and 30-250 ns, so the costliest document accepted takes about
100 MB and a fraction of a second; a chat reply holds a few hundred tokens, and a
32 MiB reply of text a handful."""

_TOKENS = b"[]{},:"
_NOT_TOKENS = bytes(range(256)).translate(None, _TOKENS)  # every byte but the tokens
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1
_WINDOW = 1 << 18
"""Bytes scanned per step of :func:`_too_costly` (each step a few C calls)."""


def _too_costly(data: bytes, max_tokens: int, max_depth: int) -> str | None:
    """Why ``data`` (a JSON document as UTF-8) is refused before parsing, or None.

    Linear time, no recursion, and no work per string beyond C-speed splitting:
    escaped backslashes, then escaped quotes, are removed (a run of backslashes
    is read in pairs from the left, as JSON reads it), so every quote left opens
    or closes a string; then, window by window, text between quotes at odd
    positions is dropped and the tokens left are counted and their nesting
    followed. Exact for valid JSON; for invalid JSON exact up to its first error,
    which is where the parser stops.
    """
    shape = data.translate(None, _NOT_TOKENS)  # C-speed: with strings, an upper bound
    if len(shape) <= max_tokens and shape.count(b"[") + shape.count(b"{") <= max_depth:
        return None
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    tokens = depth = 0
    inside = False  # whether the window starts inside a string
    for start in range(0, len(data), _WINDOW):
        parts = data[start : start + _WINDOW].split(b'"')
        outside = b"".join(parts[1::2] if inside else parts[::2])
        inside ^= len(parts) % 2 == 0  # an odd number of quotes
        window = outside.translate(None, _NOT_TOKENS)
        tokens += len(window)
        if tokens > max_tokens:
            return f"more than {max_tokens} structural tokens ([]{{}},:) outside strings"
        brackets = window.translate(None, b",:")
        if brackets:
            levels = list(accumulate(map(_STEP.__getitem__, brackets), initial=depth))
            if max(levels) > max_depth:
                return f"nested deeper than {max_depth} levels"
            depth = levels[-1]
    return None


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
    nests deeper than :data:`MAX_JSON_DEPTH`, holds more than :data:`MAX_JSON_TOKENS`
    structural tokens, or holds ``NaN``, ``Infinity`` or a number that overflows a
    float (``1e999``), so no ``int(inf)`` can fail later. A lone surrogate in a
    string (``"\\ud800"``: valid JSON, not Unicode text) comes back as U+FFFD.

    Every document read from upstream goes through here (reply, stream event, error body).
    A small document with few brackets (a healthy reply) skips the scan: a document of
    at most :data:`MAX_JSON_TOKENS` characters cannot hold more tokens, and one with at
    most :data:`MAX_JSON_DEPTH` opening brackets cannot nest deeper.
    """
    value = _by_orjson(data)
    return _by_stdlib(data) if value is _UNDECIDED else value


_UNDECIDED = object()
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
"""Each digit as ``0``, any other byte as a space: a run of digits stays a run."""
_LONG_DIGITS = b"0" * 19
"""The shortest run of digits that can spell an integer past 64 bits (``-2**63`` has 19)."""


def _by_orjson(data: bytes | str) -> Any:
    """orjson's value of ``data`` when it is provably :func:`_by_stdlib`'s, else ``_UNDECIDED``.

    Asked only of UTF-8 within the bounds (no more bytes than :data:`MAX_JSON_TOKENS`, no
    more opening brackets than :data:`MAX_JSON_DEPTH`) and with no run of 19 digits
    (looked for at C speed): every integer then fits in 64 bits, where orjson's is exact.
    Its floats are correctly rounded, as ``float()`` is; all it refuses that the stdlib
    takes (a BOM, a lone surrogate) or refuses for a reason of ours (``NaN``, ``1e999``)
    is left to the stdlib.
    """
    try:
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the stdlib's way
        return _UNDECIDED
    size = len(raw)
    if (
        size > MAX_JSON_TOKENS
        # No more bytes than the depth allowed: no more brackets either (most replies, events).
        or (size > MAX_JSON_DEPTH and raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH)
        or _LONG_DIGITS in raw.translate(_DIGITS)
    ):
        return _UNDECIDED
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _UNDECIDED


def _by_stdlib(data: bytes | str) -> Any:
    """:func:`parse_json` on the stdlib's parser: any document, bounded by the scan."""
    utf8: bytes | None = None  # the document as UTF-8, when it came so
    if isinstance(data, bytes):
        encoding = json.detect_encoding(data)
        try:
            text, raw_surrogate = data.decode(encoding), False
        except UnicodeDecodeError:  # a raw surrogate, kept as json.loads does (or not text)
            text, raw_surrogate = data.decode(encoding, "surrogatepass"), True
        utf8 = data if encoding == "utf-8" else None
    else:
        text, raw_surrogate = data, _lone_surrogates(data)
    if len(text) > MAX_JSON_TOKENS or text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        raw = text.encode("utf-8", "surrogatepass") if utf8 is None else utf8
        reason = _too_costly(raw, MAX_JSON_TOKENS, MAX_JSON_DEPTH)
        if reason is not None:
            raise ValueError(reason)
    try:
        value = _DECODER.decode(text)
    except RecursionError:  # cannot happen after the scan; kept so nothing else escapes
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    # An escape from \\uD000 up may be a surrogate (two finds at C speed; most replies
    # hold none): only then are the decoded strings looked at.
    if raw_surrogate or "\\ud" in text or "\\uD" in text:
        return _without_lone_surrogates(value)
    return value


_PASSTHROUGH = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""What the stdlib refuses or writes its own way is refused (``TypeError``), not written."""


def dumps_if_exact(value: Any, *, plain: bool = False) -> bytes | None:
    """``value`` as compact UTF-8 JSON by orjson when it is provably the JSON value the
    stdlib writes, else None: then the caller's stdlib encoder writes or refuses it, as
    it always has.

    Provably: orjson's text parses back equal to ``value``. That turns away what orjson
    writes but the stdlib does not (``NaN`` or an infinity as ``null``, an ``Enum``'s
    value, a ``UUID``'s text), and a tuple (it comes back a list); orjson itself refuses
    a non-str key, an integer past 64 bits, a lone surrogate, a subclass of ``str``,
    ``int``, ``dict`` or ``list``, a dataclass and a datetime. Its bytes differ from the
    stdlib's only in spacing, in UTF-8 where ``ensure_ascii`` escapes, and in a float's
    exponent (``1e-7``, not ``1e-07``): the same JSON.

    ``plain``: the caller vouches that ``value`` holds nothing but dicts, lists, exact
    str, int, bool and None and finite floats, which orjson writes as the stdlib does or
    refuses (all the cases above it can get wrong are other types): not parsed back.
    """
    try:
        out = orjson.dumps(value, option=_PASSTHROUGH)
    except TypeError:  # orjson.JSONEncodeError
        return None
    return out if plain or orjson.loads(out) == value else None


def json_body(payload: Any, *, plain: bool = False) -> bytes:
    """The body of a request upstream: :func:`dumps_if_exact` (``plain`` as it takes it),
    else ``json.dumps`` as it always was (ASCII, and a ``NaN`` written as such: the
    upstream says what it thinks)."""
    fast = dumps_if_exact(payload, plain=plain)
    return json.dumps(payload).encode() if fast is None else fast


_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (it cannot be encoded as UTF-8)."""
    if text.isascii():  # O(1) in CPython
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD, so it encodes as UTF-8 (the same
    object when it holds none: the common case costs an ``isascii`` or one encode)."""
    return _SURROGATE.sub("\ufffd", text) if _lone_surrogates(text) else text


def _without_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate in its strings (keys too) replaced by U+FFFD.

    A lone surrogate cannot be encoded as UTF-8, so it would fail wherever the text
    goes next (a client's reply, a log, the next request). Replaced rather than
    refused: the rest of the reply is good and paid for, and U+FFFD is what every
    UTF-8 decoder makes of what it cannot decode. Iterative, in place on the freshly
    decoded tree, each string looked at once: linear in the document.
    """
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in [k for k in node if _lone_surrogates(k)]:
                node[replace_lone_surrogates(key)] = node.pop(key)
            items: Any = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        for key, item in items:
            if isinstance(item, str):
                node[key] = replace_lone_surrogates(item)
            elif isinstance(item, dict | list):
                stack.append(item)
    return value
