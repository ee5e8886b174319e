"""Hostile JSON from upstream: non-finite numbers and deep nesting are ``InvalidOutput``.

A 200 whose usage holds ``1e999`` or ``Infinity`` once raised ``OverflowError``
(``int(inf)``), and JSON nested 100,000 deep raised ``RecursionError``, in the
reply body, an SSE event or an error body. Each case runs over real loopback
HTTP against the simulator, on all four HTTP providers, complete and stream, and
must cost exactly as many upstream requests as malformed JSON does.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError
from orchestrator import errors as E
from orchestrator.types import Request
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import call, make

DEEP = "[" * 100_000 + "]" * 100_000

# A 200 reply per route whose usage (or, for the deep case, the whole document) is hostile;
# NUM is replaced by the non-finite number.
_BODIES = {
    "openai": '{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],'
    '"usage":{"prompt_tokens":NUM,"completion_tokens":1}}',
    "anthropic": '{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",'
    '"usage":{"input_tokens":NUM,"output_tokens":1}}',
    "gemini": '{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],'
    '"usageMetadata":{"promptTokenCount":NUM}}',
    "http": '{"text":"hi","usage":{"input_tokens":NUM,"output_tokens":1}}',
}
_EVENTS = {
    "openai": 'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],'
    '"usage":{"prompt_tokens":NUM}}\n\ndata: [DONE]\n\n',
    "anthropic": 'event: message_start\ndata: {"type":"message_start","message":{"model":"m",'
    '"usage":{"input_tokens":NUM}}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
    "gemini": 'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],'
    '"usageMetadata":{"promptTokenCount":NUM}}\n\n',
}
_SSE = {"content-type": "text/event-stream"}
ROUTES = ("openai", "anthropic", "gemini", "http")


def hostile_reply(route: str, mode: str, payload: str) -> Fault:
    """A 200 carrying ``payload`` (a number for NUM, or "deep" for a 100,000-deep document)."""
    if mode == "stream" and route != "http":
        events = "data: " + DEEP + "\n\n" if payload == "deep" else _EVENTS[route]
        return Fault.status(200, body=events.replace("NUM", payload), headers=_SSE)
    body = DEEP if payload == "deep" else _BODIES[route].replace("NUM", payload)
    return Fault.status(200, body=body)


@pytest.mark.parametrize("payload", ["1e999", "-1e999", "Infinity", "-Infinity", "NaN", "deep"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_non_finite_or_deep_reply_is_invalid_output(
    sim: SimulatedServer, route: str, mode: str, payload: str
) -> None:
    sim.script(route, [hostile_reply(route, mode, payload)])
    with pytest.raises(E.ProviderError) as info:
        await call(make(route, sim), mode, Request("hi"))
    assert type(info.value) is E.InvalidOutput, repr(info.value)
    assert sim.count(route) == 1


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_deep_error_body_is_classified_by_status(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.status(503, body=DEEP)])
    with pytest.raises(E.ProviderError) as info:
        await call(make(route, sim), mode, Request("hi"))
    assert type(info.value) is E.ServerError, repr(info.value)
    assert sim.count(route) == 1


@pytest.mark.parametrize("payload", ["1e999", "Infinity", "deep"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_hostile_reply_costs_as_many_requests_as_malformed_json(
    sim: SimulatedServer, route: str, mode: str, payload: str
) -> None:
    async def upstream_count(fault: Fault) -> tuple[int, list[type[object]]]:
        sim.reset()
        sim.set_default(route, fault)
        agent = FallbackAgent([make(route, sim)], max_retries=2, retry_strategy="none")
        # A stream that already delivered text raises the error itself (mid_stream="raise").
        with pytest.raises((FallbackError, E.ProviderError)) as info:
            if mode == "complete":
                await agent.run("hi")
            else:
                async with agent.stream("hi") as s:
                    async for _ in s:
                        pass
        err = info.value
        kinds: list[type[object]] = []
        if isinstance(err, FallbackError):
            kinds = [type(a.error) for a in err.attempts]
        return sim.count(route), [*kinds, type(err)]

    # The reference: the same reply with malformed JSON where the hostile value sits.
    malformed = await upstream_count(hostile_reply(route, mode, "}"))
    hostile = await upstream_count(hostile_reply(route, mode, payload))
    assert hostile == malformed
    assert set(hostile[1]) <= {E.InvalidOutput, FallbackError}


def test_load_json_depth_limit_is_exact() -> None:
    from providers.http.base import MAX_JSON_DEPTH, load_json

    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert load_json(ok, provider="p") is not None
    too_deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(E.InvalidOutput, match="nested"):
        load_json(too_deep, provider="p")
    # Brackets inside strings are text, not nesting.
    quoted: Any = load_json('["' + "[{" * 2000 + '\\"]"]', provider="p")
    assert quoted == ["[{" * 2000 + '"]']


def test_depth_scan_is_linear_on_a_string_that_never_closes() -> None:
    """Escaped quotes with no closing quote once made the scan quadratic (20,000 pairs
    took 3 s; this document would take minutes); linear, it takes milliseconds."""
    from providers.http.base import MAX_JSON_DEPTH, load_json

    doc = "[" * (MAX_JSON_DEPTH + 1) + '"' + '\\"' * 200_000
    with pytest.raises(E.InvalidOutput):
        load_json(doc, provider="p")
