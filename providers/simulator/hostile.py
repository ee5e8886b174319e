"""Hostile replies of the simulated server: bodies too large, gzip bombs, replies without end.

``Fault.oversized`` and ``Fault.endless`` exist to test a client's bounds (size
caps, incremental decompression, overall deadlines). Bodies are written piece
by piece and only while the client reads (the server never holds a whole
oversized body), so a test can ask for hundreds of megabytes cheaply.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Coroutine, Iterator
from typing import Any

from providers.simulator.faults import Fault
from providers.simulator.http11 import Exchange
from providers.simulator.wires.base import Call, Wire, dumps, token_usage
from providers.simulator.wires.eventstream import EVENT_STREAM, grown

__all__ = ["HOSTILE_KINDS", "hostile"]

HOSTILE_KINDS = frozenset({"oversized", "endless"})
_MARK = "@@sim-oversized@@"  # where the huge text goes in a rendered reply
_PIECE = 1024 * 1024
_HIGH_WATER = 1024 * 1024  # bytes queued for the client before the writer waits


def hostile(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> Coroutine[Any, Any, None]:
    """The coroutine that writes the hostile reply ``fault`` describes."""
    if fault.kind == "oversized":
        return _oversized(ex, wire, call, fault)
    return _endless(ex, wire, call, fault)


def _content_type(wire: Wire, call: Call) -> str:
    return wire.stream_content_type(call) if call.stream else "application/json"


async def _send(ex: Exchange, data: bytes) -> bool:
    """Write one chunk once the client has read most of the last ones; False when it left."""
    while True:
        backlog = ex.backlog()
        if backlog is None:
            return False
        if backlog < _HIGH_WATER:
            break
        await asyncio.sleep(0.001)
    ex.write_chunk(data)
    await asyncio.sleep(0)
    return True


async def _oversized(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> None:
    usage = token_usage(call, "x" * min(fault.size, 64), None)
    framed = None
    if call.stream:
        events = wire.stream(call, [_MARK], usage, terminate=True)
        if wire.stream_content_type(call) == EVENT_STREAM:  # lengths and CRCs must match
            framed = grown(events, _MARK.encode(), fault.size, b"x" * _PIECE)
        rendered = b"".join(events)
    else:
        rendered = dumps(wire.reply(call, _MARK, usage)).encode()
    head, _, tail = rendered.partition(_MARK.encode())
    headers = {"Content-Type": _content_type(wire, call), "Cache-Control": "no-cache"}
    pieces = framed or _pieces(head, fault.size, tail)
    if fault.gzip:
        headers["Content-Encoding"] = "gzip"
        pieces = _gzip(pieces)
    ex.start_stream(200, headers)
    for data in pieces:
        if not await _send(ex, data):
            return
    ex.end_stream()


def _pieces(head: bytes, size: int, tail: bytes) -> Iterator[bytes]:
    """``head``, then ``size`` bytes of "x" a megabyte at a time, then ``tail``."""
    yield head
    piece = b"x" * _PIECE
    while size > 0:
        n = min(size, _PIECE)
        yield piece if n == _PIECE else piece[:n]
        size -= n
    yield tail


def _gzip(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """``pieces`` as one gzip body, each piece compressed on its own (a full flush
    after it), so a piece repeated is compressed once: a bomb streams out at wire
    speed, as a real one would, instead of at the speed of deflate."""
    squeeze = zlib.compressobj(6, zlib.DEFLATED, -15)
    crc = size = 0
    last: tuple[bytes, bytes] = (b"", b"")
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip header: deflate, no name
    for data in pieces:
        crc = zlib.crc32(data, crc)
        size += len(data)
        if data is not last[0]:
            last = (data, squeeze.compress(data) + squeeze.flush(zlib.Z_FULL_FLUSH))
        yield last[1]
    yield squeeze.flush(zlib.Z_FINISH) + struct.pack("<II", crc, size & 0xFFFFFFFF)


async def _endless(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> None:
    headers = {"Content-Type": _content_type(wire, call), "Cache-Control": "no-cache"}
    if call.stream and fault.keepalive:
        first, unit = b"", wire.keep_alive
    elif call.stream:
        text = "x" * 1000
        events = wire.stream(call, [text, text], token_usage(call, text, None), terminate=False)
        first, unit = b"".join(events[:-1]), events[-1] * 64
    elif fault.keepalive:
        first, unit = b"", b" "
    else:
        first, unit = b'{"text": "', b"x" * 65536
    ex.start_stream(200, headers)
    if first:
        ex.write_chunk(first)
    while not unit and ex.backlog() is not None:  # no keep-alive in this wire: silence
        await asyncio.sleep(max(fault.interval, 0.01))
    while unit and await _send(ex, unit):
        if fault.interval > 0:
            await asyncio.sleep(fault.interval)
