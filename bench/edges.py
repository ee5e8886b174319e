"""Pieces of ``bench/gateway.py`` for the Rust edges: the granian + pyreqwest pass-through
(the new floor) and the SSE storm (512 concurrent streams through one worker).

    python bench/edges.py --granian-floor UPSTREAM --port PORT   # run the floor alone
    python bench/edges.py --granian-trivial rsgi|asgi --port PORT

The floor needs ``pip install pyreqwest`` (granian comes with the serve extra).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from typing import Any


def run_granian_floor(upstream: str, port: int) -> None:
    """Forward each POST body to upstream's OpenAI route: granian (RSGI, one worker) in,
    one shared pyreqwest client out; nothing else."""
    from granian.constants import Interfaces
    from granian.server.embed import Server
    from pyreqwest.client import ClientBuilder

    target = upstream + "/openai/v1/chat/completions"
    json_type = [("content-type", "application/json")]

    class Floor:
        client: Any = None

        async def __rsgi__(self, scope: Any, protocol: Any) -> None:
            if scope.path == "/healthz":
                protocol.response_bytes(200, [], b"ok")
                return
            if self.client is None:
                self.client = ClientBuilder().max_connections(None).build()
            body = await protocol()
            request = self.client.post(target).header("content-type", "application/json")
            response = await request.body_bytes(body).build().send()
            data = bytes(await response.bytes())
            protocol.response_bytes(response.status, json_type, data)

    async def main() -> None:
        server = Server(Floor(), port=port, interface=Interfaces.RSGI, log_enabled=False)
        await server.serve()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


def run_granian_trivial(interface: str, port: int) -> None:
    """Read the body, answer a fixed chat completion: granian's ``rsgi`` or ``asgi`` interface
    alone, to choose the gateway's (the same load, the same reply)."""
    from granian.constants import Interfaces
    from granian.server.embed import Server

    reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": "pong"}}]})
    body = reply.encode()

    class Rsgi:
        async def __rsgi__(self, scope: Any, protocol: Any) -> None:
            json.loads(await protocol() or b"{}")
            protocol.response_bytes(200, [("content-type", "application/json")], body)

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        data, more = b"", True
        while more:
            message = await receive()
            data += message.get("body", b"")
            more = message.get("more_body", False)
        json.loads(data or b"{}")
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    target, kind = (Rsgi(), Interfaces.RSGI) if interface == "rsgi" else (asgi, Interfaces.ASGINL)

    async def main() -> None:
        await Server(target, port=port, interface=kind, log_enabled=False).serve()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


async def sse_storm(
    port: int, streams: int, body: bytes, interval: float, path: str = "/v1/chat/completions"
) -> dict[str, Any]:
    """``streams`` SSE requests at once to ``127.0.0.1:port``: every stream's largest gap
    between two chunks beyond the upstream's ``interval`` (a stall shows as a gap), the
    time to the first chunk, and how many ended whole (``[DONE]``)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()

    async def one() -> tuple[float, float, bool]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        start = time.perf_counter()
        writer.write(head + body)
        arrivals: list[float] = []
        seen = b""
        try:
            while data := await reader.read(65536):
                arrivals.append(time.perf_counter())
                seen = (seen + data)[-64:]
                if b"[DONE]" in seen or seen.endswith(b"0\r\n\r\n"):
                    break
        finally:
            writer.close()
        gaps = [b - a for a, b in itertools.pairwise(arrivals)]
        first = arrivals[0] - start if arrivals else float("inf")
        return max(gaps, default=0.0) - interval, first, b"[DONE]" in seen

    results = await asyncio.gather(*(one() for _ in range(streams)))
    late = sorted(r[0] for r in results)
    firsts = sorted(r[1] for r in results)
    return {
        "streams": streams,
        "whole": sum(r[2] for r in results),
        "worst_extra_gap_ms": late[-1] * 1000,
        "p99_extra_gap_ms": late[int(0.99 * (len(late) - 1))] * 1000,
        "stalled_over_100ms": sum(g > 0.1 for g in late),
        "first_chunk_p50_ms": firsts[len(firsts) // 2] * 1000,
    }


def stream_body(model: str = "direct") -> bytes:
    """A streamed chat completion request for ``model``."""
    messages = [{"role": "user", "content": "stream"}]
    return json.dumps({"model": model, "stream": True, "messages": messages}).encode()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--granian-floor", metavar="UPSTREAM")
    parser.add_argument("--granian-trivial", choices=("rsgi", "asgi"))
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    if args.granian_trivial:
        run_granian_trivial(args.granian_trivial, args.port)
    else:
        run_granian_floor(args.granian_floor, args.port)
