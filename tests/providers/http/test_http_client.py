"""The shared transport (one per event loop), user-supplied clients, SSE decoding,
Gemini's schema dialect and the Secret wrapper."""

from __future__ import annotations

import asyncio
import gc
import warnings
import weakref
from typing import Any

import aiohttp
import httpx
import pytest

from orchestrator import errors as E
from orchestrator.secrets import Secret, check_endpoint, is_loopback
from orchestrator.types import Request, Response
from providers.gemini.schema import gemini_schema
from providers.http import client as _client
from providers.http.client import close_shared_client, shared_client, to_transport
from providers.http.sse import SSEDecoder
from providers.openai import OpenAIChat
from providers.simulator import Fault, SimulatedServer


def test_shared_client_survives_repeated_asyncio_run(sim: SimulatedServer) -> None:
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    seen: list[Any] = []

    async def main() -> str:
        first = shared_client()
        assert shared_client() is first  # one per loop
        seen.append(first)
        return (await provider.complete(Request("hi"))).text

    assert asyncio.run(main()).startswith("sim-openai")
    assert asyncio.run(main()).startswith("sim-openai")
    assert seen[0] is not seen[1]  # a new loop gets a new client
    gc.collect()
    assert len(_client._shared) == 0  # closed and forgotten at each loop's shutdown
    assert all(t._session.closed for t in seen)


def test_loop_closed_without_shutdown_asyncgens_frees_its_client(
    sim: SimulatedServer, caplog: pytest.LogCaptureFixture
) -> None:
    # run_until_complete + close (no shutdown_asyncgens): the entry must not keep the
    # loop alive, and the orphaned session is closed without "Unclosed client session".
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    refs: list[weakref.ref[Any]] = []
    for _ in range(3):
        loop = asyncio.new_event_loop()
        assert loop.run_until_complete(provider.complete(Request("hi"))).text
        refs.append(weakref.ref(loop.run_until_complete(_current_session())))
        loop.close()
        refs.append(weakref.ref(loop))
        del loop
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # sockets: closed when collected
        gc.collect()
    assert [r() for r in refs] == [None] * 6  # loops and sessions collected
    assert len(_client._shared) == 0
    assert "Unclosed client session" not in caplog.text
    assert "Unclosed connector" not in caplog.text


async def _current_session() -> aiohttp.ClientSession:
    session = shared_client()._session  # type: ignore[attr-defined]
    assert isinstance(session, aiohttp.ClientSession)
    return session


async def test_close_shared_client_then_reuse(sim: SimulatedServer) -> None:
    first = shared_client()
    await close_shared_client()
    assert first._session.closed  # type: ignore[attr-defined]
    assert shared_client() is not first
    response = await OpenAIChat("m", base_url=sim.openai_url, api_key="k").complete(Request("x"))
    assert response.text


def test_shared_client_needs_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        shared_client()


async def test_pool_serves_200_concurrent_calls_with_one_request_each(sim: SimulatedServer) -> None:
    sim.reset()
    sim.set_default("openai", Fault.delay(0.05, Fault.ok("ok")))
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    replies = await asyncio.gather(*(provider.complete(Request("hi")) for _ in range(200)))
    assert {r.text for r in replies} == {"ok"}
    assert sim.count("openai") == 200
    sim.reset()


@pytest.mark.parametrize("kind", ["httpx", "aiohttp"])
async def test_user_client_is_used_and_not_closed(sim: SimulatedServer, kind: str) -> None:
    sim.reset()
    client: Any = httpx.AsyncClient() if kind == "httpx" else aiohttp.ClientSession()
    try:
        provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k", client=client)
        assert (await provider.complete(Request("hi"))).text.startswith("sim-openai")
        chunks = [c async for c in provider.stream(Request("hi"))]
        final = chunks.pop()
        assert isinstance(final, Response) and final.text == "".join(map(str, chunks))
        sim.script("openai", [Fault.hang(), Fault.cut_stream(how="abort")])
        slow = OpenAIChat("m", base_url=sim.openai_url, api_key="k", client=client, timeout=0.2)
        with pytest.raises(E.ProviderTimeout):
            await slow.complete(Request("hi"))
        with pytest.raises(E.StreamInterrupted):
            async for _ in provider.stream(Request("hi")):
                pass
        assert not (client.is_closed if kind == "httpx" else client.closed)
    finally:
        await (client.aclose() if kind == "httpx" else client.close())


def test_to_transport_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match=r"httpx\.AsyncClient"):
        to_transport(object())


# -- SSE -----------------------------------------------------------------------------------


def test_sse_decoder_handles_split_chunks_crlf_comments_and_event_names() -> None:
    decoder = SSEDecoder()
    raw = b': ping\r\nevent: delta\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\n\n'
    events = []
    for i in range(len(raw)):  # worst case: one byte at a time
        events += decoder.feed(raw[i : i + 1])
    events += decoder.close()
    assert [(e.event, e.data) for e in events] == [("delta", '{"a":\n1}'), ("message", "[DONE]")]


def test_sse_decoder_keeps_complete_lines_but_drops_a_half_line_at_the_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: whole\n") == []
    assert [e.data for e in decoder.close()] == ["whole"]
    decoder = SSEDecoder()
    decoder.feed(b'data: {"cut')
    assert decoder.close() == []


def _decode(chunks: list[bytes]) -> list[tuple[str, str, bool]]:
    decoder = SSEDecoder()
    events = [e for c in chunks for e in decoder.feed(c)] + decoder.close()
    return [(e.event, e.data, e.complete) for e in events]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"data: one\r\rdata: two\r\r", [("message", "one", True), ("message", "two", True)]),
        (b"data: a\r\ndata: b\r\n\r\n", [("message", "a\nb", True)]),
        (b"data: a\rdata: b\n\r\n", [("message", "a\nb", True)]),
        (b"\xef\xbb\xbfdata: x\n\n", [("message", "x", True)]),
        (b"\xef\xbbdata: x\n\n", []),  # not a whole BOM: the field name is not "data"
        (b'data: {"a":\ndata: 1', [("message", '{"a":', False)]),
        (b'data: {"choices": []}\n', [("message", '{"choices": []}', False)]),
    ],
)
def test_sse_decoder_line_endings_bom_and_eof_at_every_split(
    raw: bytes, expected: list[tuple[str, str, bool]]
) -> None:
    assert _decode([raw]) == expected
    for i in range(1, len(raw)):
        assert _decode([raw[:i], raw[i:]]) == expected, i
    assert _decode([raw[i : i + 1] for i in range(len(raw))]) == expected
    assert _decode([b"", raw, b""]) == expected


def test_sse_decoder_multibyte_split() -> None:
    decoder = SSEDecoder()
    data = "data: héllo\n\n".encode()
    events = decoder.feed(data[:8]) + decoder.feed(data[8:])
    assert events[0].data == "héllo"


# -- Gemini schema dialect ------------------------------------------------------------------------


def test_gemini_schema_strips_unsupported_keys_and_inlines_refs() -> None:
    schema = {
        "title": "Out",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "kind": {"const": "a"},
            "level": {"enum": ["low", "high"], "default": "low"},
            "n": {"type": ["integer", "null"], "minimum": 0},
            "child": {"$ref": "#/$defs/Child", "description": "the child"},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "wrapped": {"allOf": [{"$ref": "#/$defs/Child"}]},
        },
        "$defs": {
            "Child": {"title": "Child", "type": "object", "properties": {"x": {"type": "number"}}}
        },
    }
    assert gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "kind": {"type": "STRING", "enum": ["a"]},
            "level": {"type": "STRING", "enum": ["low", "high"]},
            "n": {"type": "INTEGER", "minimum": 0, "nullable": True},
            "child": {
                "type": "OBJECT",
                "properties": {"x": {"type": "NUMBER"}},
                "description": "the child",
            },
            "either": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
            "wrapped": {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}}},
        },
    }


def test_gemini_schema_stops_on_recursive_models() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    }
    out = gemini_schema(schema)
    depth = 0
    while "properties" in out:
        out = out["properties"]["next"]
        depth += 1
    assert out == {"type": "OBJECT"} and depth > 5


# -- secrets ------------------------------------------------------------------------------------------


def test_secret_never_prints() -> None:
    secret = Secret("sk-very-secret")
    shown = [str(secret), repr(secret), f"{secret}", f"{secret!r}", f"{secret:>20}"]
    for text in shown:
        assert "sk-very-secret" not in text
    assert secret.reveal() == "sk-very-secret"
    assert secret == Secret("sk-very-secret") and not Secret("")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.9.9.9", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("10.0.0.1", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_check_endpoint_rejects_non_http_urls() -> None:
    with pytest.raises(ValueError, match="not an http"):
        check_endpoint("ftp://x", field="f", allow_insecure_http=False)
    assert (
        check_endpoint("https://x.io/v1/", field="f", allow_insecure_http=False)
        == "https://x.io/v1"
    )
