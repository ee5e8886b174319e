"""A lone surrogate from upstream (``"\\ud800"``: valid JSON, not Unicode text) is U+FFFD.

JSON allows any ``\\uXXXX`` escape, so a reply may decode to a string that cannot be
encoded as UTF-8; it then failed wherever it went next (the gateway's reply, a log,
the next request holding the text). ``parse_json``, the one loader of upstream JSON,
replaces it, as a UTF-8 decoder replaces bytes it cannot decode.
"""

from __future__ import annotations

import json
import time

import pytest

from orchestrator.types import Request
from providers.http.safe_json import parse_json
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import call, make

LONE = "\ud800"


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ('"\\ud800"', "\ufffd"),
        ('"a\\udfffb"', "a\ufffdb"),
        ('"\\ud83d\\ude00 and \\ud83d"', "\U0001f600 and \ufffd"),  # a pair is one character
        ('{"k\\udc00": ["\\uDBFF", {"n": 1}]}', {"k\ufffd": ["\ufffd", {"n": 1}]}),
        (b'{"t": "\xed\xa0\x80"}', {"t": "\ufffd"}),  # the surrogate's bytes, raw
        ('["\ud800"]', ["\ufffd"]),  # a str that already holds one
        ('"\\ud7ff \\\\ud800"', "\ud7ff \\ud800"),  # not surrogates: left alone
    ],
)
def test_parse_json_replaces_lone_surrogates(document: str | bytes, expected: object) -> None:
    value = parse_json(document)
    assert value == expected
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # strict: encodable everywhere


def test_replacing_is_linear_in_the_document() -> None:
    # Half a million lone surrogates across 100,000 strings: one pass, not one per match.
    doc = "[" + ",".join(['"' + "\\ud800x" * 5 + '"'] * 100_000) + "]"
    started = time.perf_counter()
    value = parse_json(doc)
    assert time.perf_counter() - started < 5.0  # generous: it takes a fraction of a second
    assert value[0] == "\ufffdx" * 5 and len(value) == 100_000


ROUTES = ("openai", "anthropic", "gemini", "http")


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_every_provider_hands_on_text_that_can_be_encoded(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.ok(f"caf{LONE}!", chunks=1)])
    chunks, response = await call(make(route, sim), mode, Request("hi"))
    assert response.text == "caf\ufffd!" and "".join(chunks) in ("", "caf\ufffd!")
    assert sim.count(route) == 1


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ("openai", "anthropic", "gemini"))
async def test_tool_arguments_with_a_lone_surrogate_arrive_replaced(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    lookup = {"name": "lookup", "parameters": {"type": "object"}}
    sim.script(route, [Fault.ok("", tool_calls=[{"name": "lookup", "arguments": {"q": LONE}}])])
    _, response = await call(make(route, sim), mode, Request("hi", tools=[lookup]))
    assert [dict(c.arguments) for c in response.tool_calls] == [{"q": "\ufffd"}]
