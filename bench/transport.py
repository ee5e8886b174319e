"""Transport benchmark: which HTTP client should the providers share?

Runs a minimal OpenAI-shaped aiohttp server in a child process (so its CPU is
not counted) and, in this process, drives bursts of concurrent POSTs through
each candidate client, interleaved round by round so drift hits all equally:

- ``httpx-default``: ``httpx.AsyncClient()`` as a user writes it (pool of 100)
- ``httpx-pool``: ``httpx.AsyncClient`` with a pool sized for the burst
- ``httpx+aiohttp``: ``httpx.AsyncClient(transport=httpx_aiohttp.AiohttpTransport(...))``
- ``aiohttp``: a plain ``aiohttp.ClientSession`` (the floor)
- ``providers``: ``providers.OpenAIChat`` on the shared client (what we ship)

Reports calls/s, CPU per call (this process only) and p50/p99 latency.
Run: ``.venv/bin/python bench/transport.py [--concurrency 200] [--rounds 5] [--calls 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

_REPLY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
).encode()


def _serve(port: int, ready: Any) -> None:
    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=_REPLY, content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_BODY = {"model": "bench", "messages": [{"role": "user", "content": "hi"}]}
_HEADERS = {"authorization": "Bearer sk-bench", "content-type": "application/json"}


async def _make_clients(
    url: str, concurrency: int, with_providers: bool
) -> dict[str, tuple[Callable[[], Awaitable[Any]], Any]]:
    import aiohttp
    import httpx
    from httpx_aiohttp import AiohttpTransport

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    default = httpx.AsyncClient()
    pooled = httpx.AsyncClient(limits=limits)
    hx_aio = httpx.AsyncClient(transport=AiohttpTransport(limits=limits))
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    )

    def httpx_call(client: httpx.AsyncClient) -> Callable[[], Awaitable[Any]]:
        async def call() -> Any:
            r = await client.post(url, json=_BODY, headers=_HEADERS)
            r.raise_for_status()
            return r.json()["choices"][0]["message"]["content"]

        return call

    async def aiohttp_call() -> Any:
        async with session.post(url, json=_BODY, headers=_HEADERS) as r:
            r.raise_for_status()
            return (await r.json())["choices"][0]["message"]["content"]

    clients: dict[str, tuple[Callable[[], Awaitable[Any]], Any]] = {
        "httpx-default": (httpx_call(default), default),
        "httpx-pool": (httpx_call(pooled), pooled),
        "httpx+aiohttp": (httpx_call(hx_aio), hx_aio),
        "aiohttp": (aiohttp_call, session),
    }
    if with_providers:
        from orchestrator.types import Request
        from providers.openai import OpenAIChat

        provider = OpenAIChat(
            "bench", base_url=url.removesuffix("/chat/completions"), api_key="sk-bench"
        )
        request = Request("hi")

        async def provider_call() -> Any:
            return (await provider.complete(request)).text

        clients["providers"] = (provider_call, None)
    return clients


async def _burst(call: Callable[[], Awaitable[Any]], calls: int, concurrency: int) -> list[float]:
    latencies: list[float] = []
    queue = iter(range(calls))

    async def worker() -> None:
        for _ in queue:
            t0 = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - t0)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


async def _run(args: argparse.Namespace, url: str) -> dict[str, dict[str, float]]:
    clients = await _make_clients(url, args.concurrency, not args.no_providers)
    stats: dict[str, dict[str, list[float]]] = {
        k: {"wall": [], "cpu": [], "lat": []} for k in clients
    }
    for call, _ in clients.values():  # warm-up: open connections, load modules
        await _burst(call, args.concurrency, args.concurrency)
    for _ in range(args.rounds):
        for name, (call, _) in clients.items():
            w0, c0 = time.perf_counter(), time.process_time()
            lat = await _burst(call, args.calls, args.concurrency)
            stats[name]["wall"].append(time.perf_counter() - w0)
            stats[name]["cpu"].append(time.process_time() - c0)
            stats[name]["lat"].extend(lat)
    for _, closer in clients.values():
        if closer is not None:
            await closer.close() if hasattr(closer, "closed") else await closer.aclose()
    if not args.no_providers:
        from providers.http.client import close_shared_client

        await close_shared_client()
    out: dict[str, dict[str, float]] = {}
    for name, s in stats.items():
        n = args.calls * args.rounds
        lat = sorted(s["lat"])
        out[name] = {
            "calls_per_s": n / sum(s["wall"]),
            "cpu_ms_per_call": 1000 * sum(s["cpu"]) / n,
            "p50_ms": 1000 * statistics.median(lat),
            "p99_ms": 1000 * lat[int(0.99 * (len(lat) - 1))],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000, help="calls per burst")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--no-providers", action="store_true", help="clients only, not providers.OpenAIChat"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    port = _free_port()
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(port, ready), daemon=True)
    server.start()
    try:
        if not ready.wait(10):
            raise SystemExit("bench server did not start within 10 s")
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        results = asyncio.run(_run(args, url))
    finally:
        server.terminate()
        server.join(5)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    base = results["httpx-default"]
    print(
        f"{args.concurrency} concurrent, {args.calls} calls x {args.rounds} rounds "
        f"(client CPU only; server in its own process)"
    )
    head = f"{'client':<15}{'calls/s':>10}{'x httpx':>9}{'CPU ms/call':>13}"
    print(f"{head}{'p50 ms':>9}{'p99 ms':>9}")
    for name, r in results.items():
        print(
            f"{name:<15}{r['calls_per_s']:>10.0f}{r['calls_per_s'] / base['calls_per_s']:>9.2f}"
            f"{r['cpu_ms_per_call']:>13.3f}{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}"
        )


if __name__ == "__main__":
    main()
