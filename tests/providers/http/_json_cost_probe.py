"""One costly reply over loopback, measured in a process of its own (run by test_json_cost).

``python -m tests.providers.http._json_cost_probe SCENARIO ROUTE`` starts a tiny raw HTTP
server on 127.0.0.1, calls one provider once, and prints a JSON line: the outcome
(error class or "ok"), seconds taken (``wall``; ``seconds`` without the time the
machine ran other processes, :mod:`tests.timing`), peak RSS growth (MB) and the event
loop's longest stall (a ticker's largest gap, seconds, also without the machine's
share: a held loop is this process's own time).

- ``lists``: a gzip reply of about 31 KB that inflates to 30 MB of valid JSON holding
  ten million ``[]`` beside a well-formed reply (timeout 30 s: the refusal is what is
  measured, and a loaded machine took 3 s of wall-clock time for its 0.3 s, which a 2 s
  timeout turned into ``ProviderTimeout``).
- ``late``: a valid reply of about a million numbers (under the token cap, about half a
  second to parse), its last bytes sent at 1.9 s (timeout 2 s).
"""

from __future__ import annotations

import asyncio
import json
import re
import resource
import sys
import zlib
from collections.abc import Iterator

from orchestrator.errors import FailoverError
from orchestrator.types import Request
from providers import HTTPFallback, OpenAIChat
from tests.timing import Stopwatch

_REPLY = {
    "http": '{"text":"hi","pad":PAD}',
    "openai": '{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},'
    '"finish_reason":"stop"}],"pad":PAD}',
}


def _gzip(pieces: Iterator[bytes]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # a gzip member, built piece by piece
    return b"".join([packer.compress(p) for p in pieces] + [packer.flush()])


def _body(scenario: str, route: str) -> tuple[bytes, bool, float]:
    """(body on the wire, gzip'ed, seconds before its last bytes)."""
    head, tail = _REPLY[route].encode().split(b"PAD")
    if scenario == "lists":
        item, count, hold = b"[],", 10_000_000, 0.0
    else:
        item, count, hold = b"1.5,", 1_000_000, 1.9
    piece = item * 100_000
    pieces = [head, b"["] + [piece] * (count // 100_000) + [b"1]", tail]
    if scenario == "lists":
        return _gzip(iter(pieces)), True, hold
    return b"".join(pieces), False, hold


async def _main(scenario: str, route: str) -> dict[str, object]:
    body, gzipped, hold = _body(scenario, route)
    timeout = 30.0 if scenario == "lists" else 2.0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + (b"Content-Encoding: gzip\r\n" if gzipped else b"")
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            + body[:-8]
        )
        await writer.drain()
        await asyncio.sleep(hold)
        writer.write(body[-8:])
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    if route == "http":
        provider: HTTPFallback | OpenAIChat = HTTPFallback(
            f"http://127.0.0.1:{port}/reply", timeout=timeout
        )
    else:
        provider = OpenAIChat(
            "gpt-sim", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-x", timeout=timeout
        )
    gap = 0.0

    async def ticker() -> None:
        nonlocal gap
        while True:
            tick = Stopwatch()  # a gap the machine made (another process ran) is not one
            await asyncio.sleep(0.005)
            gap = max(gap, tick.elapsed())

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    call = Stopwatch()
    try:
        await provider.complete(Request(prompt="hi"))
        outcome, message = "ok", ""
    except FailoverError as exc:
        outcome, message = type(exc).__name__, str(exc)
    seconds, wall = call.elapsed(), call.wall()
    growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    await asyncio.sleep(0.02)  # the ticker's turn to see a stall that just ended
    tick.cancel()
    server.close()
    return {
        "outcome": outcome,
        "message": message[:200],
        "seconds": round(seconds, 3),
        "wall": round(wall, 3),
        "rss_growth_mb": round(growth, 1),
        "max_gap": round(gap, 3),
        "wire_bytes": len(body),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_main(sys.argv[1], sys.argv[2]))))
