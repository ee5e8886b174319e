"""JSON through orjson only where its answer is the stdlib's (``providers.http.safe_json``).

orjson parses and writes 3-4x faster but is not a drop-in: it reads an integer past 64
bits as a float, refuses a lone surrogate and a BOM, and ``1e999``/``NaN`` for reasons
not ours; it writes ``NaN`` as ``null``, an ``Enum``, a ``UUID``, a dataclass and a
datetime where the stdlib refuses them, and refuses non-str keys and big integers. Each
case below goes the stdlib's way with today's answer; each fails if plain ``orjson.loads``
or ``orjson.dumps`` is swapped in.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from providers.http import safe_json
from providers.http.safe_json import MAX_JSON_DEPTH, json_body, parse_json
from providers.serve import call
from providers.serve.call import dumps

_STDLIB = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (b"18446744073709551616", 2**64),  # orjson: 1.8446744073709552e19
        (b"-9223372036854775809", -(2**63) - 1),
        (b'{"n": [123456789012345678901234567890]}', {"n": [123456789012345678901234567890]}),
        (b'{"id": "1234567890123456789", "n": 5}', {"id": "1234567890123456789", "n": 5}),
        (b"\xef\xbb\xbf{}", {}),  # a BOM: orjson refuses it, json.loads takes it
        (b'["\\ud800"]', ["\ufffd"]),  # a lone surrogate's escape: orjson refuses it
        (b'{"t": "\xed\xa0\x80"}', {"t": "\ufffd"}),  # its raw bytes
        ('["\ud800"]', ["\ufffd"]),  # a str holding one (orjson: not UTF-8)
        ('{"t": "caf\u00e9 \U0001f600"}', {"t": "caf\u00e9 \U0001f600"}),  # other text: orjson's
    ],
)
def test_parse_json_answers_as_the_stdlib_where_orjson_differs(
    document: bytes | str, expected: Any
) -> None:
    value = parse_json(document)
    assert value == expected
    assert type(value) is type(expected)
    if isinstance(expected, int):
        assert value == json.loads(document)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (b"[NaN]", "NaN is not a JSON number"),
        (b"[-Infinity]", "-Infinity is not a JSON number"),
        (b'{"n": 1e999}', "number out of range: 1e999"),
        (b"[1, 2", "Expecting ',' delimiter"),
    ],
)
def test_parse_json_refuses_with_its_own_reason(document: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_json(document)


class _Counting:
    """Wraps a parse function, counting its calls."""

    def __init__(self, parse: Any) -> None:
        self.parse, self.calls = parse, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.parse(*args)


def test_a_healthy_reply_is_parsed_once_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _Counting(orjson.loads)
    slow = _Counting(safe_json._DECODER.decode)
    monkeypatch.setattr(safe_json, "orjson", SimpleNamespace(**{**vars(orjson), "loads": fast}))
    monkeypatch.setattr(safe_json._DECODER, "decode", slow)
    reply = b'{"id":"x","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3}}'
    assert parse_json(reply)["usage"] == {"prompt_tokens": 3}
    assert parse_json(reply.decode())["id"] == "x"  # a stream event's text too
    assert (fast.calls, slow.calls) == (2, 0)
    with pytest.raises(ValueError, match="nested deeper"):  # bounds first: orjson not asked
        parse_json(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert parse_json(b"18446744073709551616") == 2**64  # the stdlib's: exact
    assert (fast.calls, slow.calls) == (2, 1)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_JSON_VALUES)
def test_parse_json_equals_the_stdlib(value: Any) -> None:
    document = json.dumps(value)
    parsed = parse_json(document.encode())
    assert parsed == json.loads(document)
    assert json.dumps(parsed) == document  # same types: an int stays an int, -0.0 stays


@given(
    st.from_regex(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
)
def test_numbers_equal_float_and_int(text: str) -> None:
    expected = json.loads(text)
    if isinstance(expected, float) and not math.isfinite(expected):
        with pytest.raises(ValueError, match="out of range"):
            parse_json(text)
        return
    parsed = parse_json(text)
    assert parsed == expected and type(parsed) is type(expected)


class _Kind(enum.Enum):
    A = "a"


class _Number(enum.IntEnum):
    ONE = 1


@dataclass
class _Point:
    x: int


_REFUSED = [
    ({"t": math.nan}, ValueError),  # orjson: null
    ([math.inf], ValueError),
    ({"k": _Kind.A}, TypeError),  # orjson: "a"
    ([uuid.UUID(int=7)], TypeError),  # orjson: its text
    ({"p": _Point(1)}, TypeError),  # orjson: {"x":1}
    ([datetime.date(2026, 1, 2)], TypeError),  # orjson: "2026-01-02"
]
_WRITTEN = [
    {1: "a", None: 2},  # orjson refuses keys that are not str
    [2**64, -(2**63) - 1],  # orjson refuses integers past 64 bits
    (1, [2, (3,)]),  # a tuple: an array
    {"n": _Number.ONE},  # an int subclass: the stdlib's text for it
    {"t": "caf\u00e9 \U0001f600\n\x7f\u2028"},
    {"id": "chatcmpl-1", "choices": [{"logprobs": None, "index": 0}], "ok": True},
]


_OURS_AND_THEIRS = [(dumps, _STDLIB.encode), (json_body, json.dumps)]
"""The gateway's replies and the request bodies upstream, each beside the stdlib call it was."""


@pytest.mark.parametrize(
    ("ours", "value", "error"),
    [(dumps, v, e) for v, e in _REFUSED] + [(json_body, v, e) for v, e in _REFUSED[2:]],
)
def test_refused_as_the_stdlib_refuses(ours: Any, value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        ours(value)


@pytest.mark.parametrize("value", _WRITTEN)
@pytest.mark.parametrize(("ours", "theirs"), _OURS_AND_THEIRS)
def test_written_as_the_stdlib_writes(ours: Any, theirs: Any, value: Any) -> None:
    assert json.loads(ours(value)) == json.loads(theirs(value))


def test_a_lone_surrogate_goes_to_the_client_as_replacement_character() -> None:
    assert dumps({"t": "a\ud800"}) == '{"t":"a\ufffd"}'


def test_a_request_body_keeps_json_dumps_nan_and_escapes() -> None:
    assert json_body({"temperature": math.nan}) == b'{"temperature": NaN}'  # upstream judges
    assert json_body({"t": "\ud800"}) == b'{"t": "\\ud800"}'


def test_a_reply_is_written_once_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    stdlib = _Counting(call._ENCODER.encode)
    monkeypatch.setattr(call, "_ENCODER", SimpleNamespace(encode=stdlib))
    reply = {"id": "x", "choices": [{"message": {"content": "hi"}, "logprobs": None}]}
    assert json.loads(dumps(reply)) == reply
    assert stdlib.calls == 0
    with pytest.raises(ValueError):
        dumps({"t": math.nan})
    assert stdlib.calls == 1


@given(_JSON_VALUES)
def test_dumps_writes_the_stdlib_value(value: Any) -> None:
    text = dumps(value)
    assert json.loads(text) == json.loads(_STDLIB.encode(value))
    assert json_body(value) == text.encode() or json.loads(json_body(value)) == json.loads(text)
