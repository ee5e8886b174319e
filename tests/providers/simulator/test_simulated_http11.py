"""The simulator's HTTP/1.1 layer over a raw loopback socket: framing errors get a 400,
``Expect: 100-continue`` gets its interim reply, keep-alive and pipelining keep working."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from providers.simulator import Fault, SimulatedServer

BODY = json.dumps({"prompt": "hello"}).encode()


def _post(headers: bytes, body: bytes = b"") -> bytes:
    return b"POST /http/complete HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n" + body


def _sized(body: bytes = BODY, extra: bytes = b"") -> bytes:
    return _post(b"Content-Length: %d\r\n%b" % (len(body), extra), body)


async def _exchange(sim: SimulatedServer, data: bytes) -> bytes:
    """Send ``data``, return everything the server sends until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()


def _statuses(raw: bytes) -> list[int]:
    return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", raw)]


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(_post(b"Content-Length: abc\r\n", BODY), id="content-length-abc"),
        pytest.param(_post(b"Content-Length: -5\r\n", BODY), id="content-length-negative"),
        pytest.param(
            _post(b"Transfer-Encoding: chunked\r\n", b"zz\r\n" + BODY + b"\r\n0\r\n\r\n"),
            id="bad-chunk-size",
        ),
        pytest.param(b"NOT A REQUEST\r\n\r\n", id="bad-request-line"),
    ],
)
async def test_bad_framing_is_answered_400_and_closed(
    sim: SimulatedServer, request_bytes: bytes
) -> None:
    raw = await _exchange(sim, request_bytes)  # returns: the server closed the connection
    assert _statuses(raw) == [400]
    assert b'"error": "malformed request' in raw
    assert sim.count("http") == 0


async def test_bad_framing_after_a_good_request_is_answered_after_its_reply(
    sim: SimulatedServer,
) -> None:
    raw = await _exchange(sim, _sized() + _post(b"Content-Length: abc\r\n"))
    assert _statuses(raw) == [200, 400]
    assert sim.count("http") == 1


async def test_an_oversized_head_is_answered_431(sim: SimulatedServer) -> None:
    raw = await _exchange(sim, _sized(extra=b"X-Big: " + b"a" * 70_000 + b"\r\n"))
    assert _statuses(raw) == [431]


async def test_expect_100_continue_gets_the_interim_reply_then_the_answer(
    sim: SimulatedServer,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    try:
        head = b"Content-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n" % len(BODY)
        writer.write(_post(head))  # the head alone: the client waits before sending the body
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(BODY)
        raw = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    assert _statuses(raw) == [200]
    assert b'"text":"sim-http: hello"' in raw


async def test_keep_alive_serves_requests_one_after_another(sim: SimulatedServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    try:
        for _ in range(3):
            writer.write(_sized())
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            assert head.startswith(b"HTTP/1.1 200 OK\r\n")
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            assert b"sim-http: hello" in await reader.readexactly(length)
    finally:
        writer.close()
    assert sim.count("http") == 3


async def test_pipelined_replies_keep_their_order_behind_a_slow_one(sim: SimulatedServer) -> None:
    sim.script("http", [Fault.delay(0.2, then=Fault.ok("slow")), Fault.ok("fast")])
    raw = await _exchange(sim, _sized() + _sized(extra=b"Connection: close\r\n"))
    assert _statuses(raw) == [200, 200]
    assert raw.index(b"slow") < raw.index(b"fast")


async def test_http10_without_keep_alive_is_closed_after_the_reply(sim: SimulatedServer) -> None:
    request = b"POST /http/complete HTTP/1.0\r\nContent-Length: %d\r\n\r\n%b" % (len(BODY), BODY)
    raw = await _exchange(sim, request)
    assert _statuses(raw) == [200]
