"""What a document from upstream may cost to parse is bounded, not only its bytes.

A gzip reply of about 30 KB inflated to 30 MB of valid JSON holding ten million
``[]``: under ``max_response_bytes``, it took 770 MB and 3.7 s of one C call that
held the event loop, and a call with ``timeout=2`` succeeded after it. Now a
document holds at most ``MAX_JSON_TOKENS`` structural tokens (counted by a linear,
string-aware scan before parsing), a large one is parsed off the loop, and the
provider's timeout covers reading and parsing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import errors as E
from orchestrator.types import Request
from providers.http.documents import load_json
from providers.http.safe_json import MAX_JSON_DEPTH, MAX_JSON_TOKENS, _too_costly, parse_json
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import call, make
from tests.timing import Stopwatch

ROOT = Path(__file__).resolve().parents[3]


def _tokens(count: int) -> str:
    """An array of ``count`` structural tokens: ``[`` + (count - 2) commas + ``]``."""
    return "[" + "0," * (count - 2) + "0]"


# -- the counter ---------------------------------------------------------------------


def test_the_token_cap_is_exact() -> None:
    assert len(load_json(_tokens(MAX_JSON_TOKENS), provider="p")) == MAX_JSON_TOKENS - 1
    with pytest.raises(E.InvalidOutput, match="structural tokens"):
        load_json(_tokens(MAX_JSON_TOKENS + 1), provider="p")
    with pytest.raises(E.InvalidOutput, match="structural tokens"):
        load_json(_tokens(MAX_JSON_TOKENS + 1).encode(), provider="p")


def test_every_structural_token_counts() -> None:
    pairs = '{"a":[' + "{},[]," * (MAX_JSON_TOKENS // 6) + "{}]}"  # { } [ ] , and :
    assert _too_costly(pairs.encode(), MAX_JSON_TOKENS, MAX_JSON_DEPTH) is not None
    assert _too_costly(pairs.encode(), MAX_JSON_TOKENS * 2, MAX_JSON_DEPTH) is None


def test_tokens_inside_strings_do_not_count() -> None:
    text = "[{x: 1}, [2]], " * (MAX_JSON_TOKENS // 4)  # far more than the cap, as text
    doc = json.dumps({"text": text, "more": [text, {"k": text}]})
    assert parse_json(doc)["text"] == text
    assert parse_json(doc.encode())["more"][1]["k"] == text


@pytest.mark.parametrize(
    "escape",
    [
        '\\"',  # an escaped quote does not end the string
        "\\\\",  # an escaped backslash does not escape what follows
        '\\\\\\"',  # nor do three: a backslash, then a quote, both escaped
        "\\u0022",  # a quote spelled in hex
    ],
)
def test_escapes_are_read_as_json_reads_them(escape: str) -> None:
    inside = ("," + escape) * (MAX_JSON_TOKENS // 2)
    doc = '["' + inside + '"]'
    assert parse_json(doc) == [json.loads('"' + inside + '"')]
    # After a string ending in an escaped backslash, the commas are tokens again.
    over = '["' + escape + '\\\\"' + ",0" * MAX_JSON_TOKENS + "]"
    with pytest.raises(ValueError, match="structural tokens"):
        parse_json(over)


def _reference(doc: bytes) -> tuple[int, int]:
    """(tokens, deepest nesting) of ``doc``, one character at a time, as JSON reads it."""
    tokens = depth = deepest = 0
    inside = False
    i = 0
    while i < len(doc):
        char = doc[i : i + 1]
        if char == b"\\" and doc[i + 1 : i + 2] in (b"\\", b'"'):
            i += 2  # an escaped backslash or quote
            continue
        if char == b'"':
            inside = not inside
        elif not inside and char in b"[]{},:":
            tokens += 1
            depth += 1 if char in b"[{" else -1 if char in b"]}" else 0
            deepest = max(deepest, depth)
        i += 1
    return tokens, deepest


@settings(max_examples=300, deadline=None)
@given(
    doc=st.lists(
        st.sampled_from(
            [b"[", b"]", b"{", b"}", b",", b":", b'"', b"a", b"\\", b'\\"', b"\\\\", b"\\u0022"]
        ),
        max_size=40,
    ).map(b"".join),
    window=st.integers(1, 9),
)
def test_the_scan_agrees_with_a_reference_whatever_the_windows(doc: bytes, window: int) -> None:
    import providers.http.safe_json as safe_json

    tokens, deepest = _reference(doc)
    old, safe_json._WINDOW = safe_json._WINDOW, window  # strings and escapes cross windows
    try:
        got = _too_costly(doc, 3, 1)
    finally:
        safe_json._WINDOW = old
    assert (got is None) == (tokens <= 3 and deepest <= 1), (got, tokens, deepest)
    if got is not None:
        assert tokens > 3 if "tokens" in got else deepest > 1


def test_depth_is_still_exact_past_the_size_threshold() -> None:
    text = "x" * MAX_JSON_TOKENS
    ok = "[" * MAX_JSON_DEPTH + json.dumps(text) + "]" * MAX_JSON_DEPTH
    assert parse_json(ok) is not None
    deep = "[" * (MAX_JSON_DEPTH + 1) + json.dumps(text) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(ValueError, match="nested deeper"):
        parse_json(deep)


@pytest.mark.parametrize(
    "doc",
    [
        '"' + '\\",' * 3_000_000,  # a string that never closes, full of escaped quotes
        "[" + '"",' * 3_000_000 + '""]',  # three million strings
        '["' * 16_000_000,  # 32 MB, deep, of strings (the old scan: 1.6-2.3 s)
        "[" + "[]," * 3_000_000 + "[]]",  # three million lists (the old parse: ~1 s)
        '"' + "\\" * 6_000_001 + ",[]" * 1_000_000,  # a long run of backslashes
    ],
    ids=["unterminated-escapes", "strings", "deep-strings", "lists", "backslashes"],
)
def test_the_scan_is_linear_and_refuses_fast(doc: str) -> None:
    watch = Stopwatch()  # the process's own seconds: not the machine's other work
    with pytest.raises(ValueError):
        parse_json(doc.encode())
    assert watch.elapsed() < 1.0


def test_a_small_reply_skips_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    import providers.http.safe_json as safe_json

    def scan(*args: Any) -> str | None:
        raise AssertionError("a healthy small reply must not be scanned")

    monkeypatch.setattr(safe_json, "_too_costly", scan)
    reply = {"choices": [{"message": {"content": "hello " * 300}}], "usage": {"n": [1, 2]}}
    assert parse_json(json.dumps(reply).encode()) == reply


# -- over loopback, each in a process of its own (peak RSS) --------------------------------


def _probe(scenario: str, route: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.providers.http._json_cost_probe", scenario, route],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("route", ["http", "openai"])
def test_ten_million_lists_in_a_small_gzip_reply_are_refused_quickly(route: str) -> None:
    got = _probe("lists", route)
    assert got["wire_bytes"] < 64 * 1024
    assert got["outcome"] == "InvalidOutput", got
    assert "structural tokens" in got["message"]
    assert got["seconds"] < 1.5, got  # was 3.7 s, then success (own seconds, not the wall's)
    assert got["rss_growth_mb"] < 300, got  # was 770 MB
    assert got["max_gap"] < 0.5, got  # the loop was held 3.6 s


@pytest.mark.parametrize("route", ["http", "openai"])
def test_the_timeout_covers_parsing_the_reply(route: str) -> None:
    # The body's last bytes arrive at 1.9 s; parsing it takes a few tenths of a second.
    got = _probe("late", route)
    assert got["outcome"] == "ProviderTimeout", got  # was a success at 2.1 s
    assert got["seconds"] < 2.3, got
    assert got["max_gap"] < 0.5, got


# -- streams: each event's data is bounded the same way ----------------------------------

_PAD = "[" + "[]," * 3_000_000 + "[]]"  # 9 MB, far past the token cap
_EVENTS = {
    "openai": 'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],'
    '"pad":PAD}\n\ndata: [DONE]\n\n',
    "gemini": 'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],'
    '"pad":PAD}\n\n',
    "anthropic": 'event: message_start\ndata: {"type":"message_start","message":{"model":"m",'
    '"usage":{"input_tokens":1}},"pad":PAD}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"hi"}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
}


@pytest.mark.parametrize("route", ["openai", "anthropic", "gemini"])
async def test_a_stream_event_past_the_token_cap_is_invalid_output(
    sim: SimulatedServer, route: str
) -> None:
    body = _EVENTS[route].replace("PAD", _PAD)
    sim.script(route, [Fault.status(200, body=body, headers={"content-type": "text/event-stream"})])
    # The CPU this process spent (the simulator's thread sending 9 MB, the scan): work
    # counted, not time; at load 13 the wall clock less the machine's share was 2.6 s.
    cpu = time.process_time()
    with pytest.raises(E.InvalidOutput, match="structural tokens"):
        await call(make(route, sim), "stream", Request(prompt="hi"))
    assert time.process_time() - cpu < 2.0
