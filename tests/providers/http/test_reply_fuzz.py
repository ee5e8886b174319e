"""Fuzz the reply parsers: whatever bytes come back, the outcome is a Response or a
taxonomy error (``orchestrator.errors.ProviderError``), never anything else.

The providers run on an in-memory httpx client (no sockets), complete and stream,
over arbitrary bytes and over valid replies with one value replaced by an
arbitrary JSON value (huge or non-finite numbers, deep lists, wrong types).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import errors as E
from orchestrator.types import Request, Response
from providers.anthropic import AnthropicMessages
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.openai import OpenAIChat

ROUTES = ("openai", "anthropic", "gemini", "http")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(body), 97):  # odd-sized chunks split lines and UTF-8
        yield body[i : i + 97]


def canned(status: int, body: bytes) -> httpx.AsyncClient:
    """An in-memory client (httpx's ``MockTransport``, no sockets) answering every request
    with ``status`` and ``body``, streamed in odd-sized chunks."""

    def reply(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(status, headers=headers, content=_chunks(body))

    return httpx.AsyncClient(transport=httpx.MockTransport(reply))


def provider(route: str, client: httpx.AsyncClient) -> Any:
    if route == "openai":
        return OpenAIChat("m", base_url="http://127.0.0.1:1/v1", api_key="sk-x", client=client)
    if route == "anthropic":
        return AnthropicMessages("m", base_url="http://127.0.0.1:1", api_key="k", client=client)
    if route == "gemini":
        return GeminiGenerate("m", base_url="http://127.0.0.1:1", api_key="k", client=client)
    return HTTPFallback("http://127.0.0.1:1/c", client=client)


def outcome(route: str, mode: str, status: int, body: bytes, request: Request) -> object:
    """What one call gives: a Response, or the exception it raised."""

    async def run() -> object:
        async with canned(status, body) as client:
            p = provider(route, client)
            if mode == "complete":
                return await p.complete(request)
            last: object = None
            async for item in p.stream(request):
                last = item
            return last

    try:
        return asyncio.run(run())
    except Exception as exc:
        return exc


def check(result: object) -> None:
    assert isinstance(result, Response | E.ProviderError), f"{type(result).__name__}: {result!r}"


_OK: dict[str, Any] = {
    "openai": {
        "model": "m",
        "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    },
    "anthropic": {
        "model": "m",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
    "gemini": {
        "modelVersion": "m",
        "candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1},
    },
    "http": {"text": "hi", "model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}},
}
_OK_EVENTS: dict[str, list[Any]] = {
    "openai": [
        {"model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
        "[DONE]",
    ],
    "anthropic": [
        {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ],
    "gemini": [
        {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]},
        {
            "candidates": [{"content": {"parts": [{"text": "!"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1},
        },
    ],
}


def _nested(depth: int) -> list[Any]:
    """A list nested ``depth`` deep (past the loader's limit of 512 at most 700, which
    ``json.dumps`` in this test can still write)."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**4000)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
) | st.integers(min_value=1, max_value=700).map(_nested)


# Numbers a hostile upstream sends where counts belong (drawn half the time).
HOSTILE_NUMBERS = st.sampled_from(
    [float("inf"), float("-inf"), float("nan"), 10**400, -(10**400), -1, 1e308, 2.5]
)


def _paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*here, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*here, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    node = copy
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return copy


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    path = draw(st.sampled_from(_paths(doc)))
    return _replace(doc, path, draw(HOSTILE_NUMBERS | JSON_VALUES))


def _sse(events: list[Any]) -> bytes:
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    return "".join(lines).encode()


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
@FUZZ
@given(body=st.binary(max_size=600), status=st.sampled_from([200, 200, 400, 429, 500, 529]))
def test_arbitrary_bytes_give_a_response_or_a_taxonomy_error(
    route: str, mode: str, body: bytes, status: int
) -> None:
    check(outcome(route, mode, status, body, Request("hi")))


@pytest.mark.parametrize("route", ROUTES)
@FUZZ
@given(data=st.data())
def test_mutated_replies_give_a_response_or_a_taxonomy_error(route: str, data: Any) -> None:
    body = json.dumps(data.draw(mutated(_OK[route]))).encode()
    check(outcome(route, "complete", 200, body, Request("hi")))


@pytest.mark.parametrize("route", ("openai", "anthropic", "gemini"))
@FUZZ
@given(data=st.data())
def test_mutated_streams_give_a_response_or_a_taxonomy_error(route: str, data: Any) -> None:
    events = list(_OK_EVENTS[route])
    i = data.draw(st.integers(0, len(events) - 1))
    if not isinstance(events[i], str):
        events[i] = data.draw(mutated(events[i]))
    check(outcome(route, "stream", 200, _sse(events), Request("hi")))


@pytest.mark.parametrize("route", ROUTES)
@FUZZ
@given(error=st.data())
def test_mutated_error_bodies_give_a_taxonomy_error(route: str, error: Any) -> None:
    doc = {"error": {"message": "bad", "type": "server_error", "code": 500, "status": "X"}}
    body = json.dumps(error.draw(mutated(doc))).encode()
    for mode in ("complete", "stream"):
        check(
            outcome(
                route, mode, error.draw(st.sampled_from([400, 429, 500, 529])), body, Request("hi")
            )
        )
