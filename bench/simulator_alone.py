"""How fast is the simulated provider server on its own?

Starts ``python -m providers.simulator`` in a child process (``providers_bench.Sim``) (so the
client's CPU and the server's are measured apart) and drives it with a plain
``aiohttp.ClientSession`` loop: sequential calls, then bursts of 200 concurrent
calls, on the OpenAI JSON route and the OpenAI SSE route. Prints calls/s,
p50/p99 latency and the server's CPU per call. The server must not be the
bottleneck of ``bench/`` (which needs thousands of calls/s at 200 in flight).

Run: ``.venv/bin/python bench/simulator_alone.py [--calls 3000] [--concurrency 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).parent))

from providers_bench import Sim


def _server_cpu(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _call(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> float:
    start = time.perf_counter()
    async with session.post(url, json=body) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"unexpected HTTP {response.status} from {url}")
    return time.perf_counter() - start


async def _run(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], calls: int, concurrency: int
) -> tuple[float, list[float]]:
    latencies: list[float] = []
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            latencies.append(await _call(session, url, body))

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


def _report(label: str, elapsed: float, latencies: list[float], cpu: float) -> None:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(
        f"{label:<34} {len(latencies) / elapsed:>9.0f} calls/s   "
        f"p50 {statistics.median(ordered) * 1e3:6.2f} ms   p99 {p99 * 1e3:6.2f} ms   "
        f"server CPU {cpu / len(latencies) * 1e6:6.0f} us/call"
    )


async def _bench(base: str, pid: int, calls: int, concurrency: int) -> None:
    messages = [{"role": "user", "content": "Summarise the incident report in one line."}]
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("openai json", f"{base}/openai/v1/chat/completions", {"model": "m", "messages": messages}),
        (
            "openai sse",
            f"{base}/openai/v1/chat/completions",
            {"model": "m", "messages": messages, "stream": True},
        ),
        (
            "anthropic json",
            f"{base}/anthropic/v1/messages",
            {"model": "m", "max_tokens": 64, "messages": messages},
        ),
    ]
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _run(session, cases[0][1], cases[0][2], 200, concurrency)  # warm the pool
        for label, url, body in cases:
            for mode, n, conc in (
                ("sequential", calls // 3, 1),
                (f"{concurrency} concurrent", calls, concurrency),
            ):
                cpu0 = _server_cpu(pid)
                elapsed, latencies = await _run(session, url, body, n, conc)
                _report(f"{label}, {mode}", elapsed, latencies, _server_cpu(pid) - cpu0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=3000, help="calls per concurrent run")
    parser.add_argument("--concurrency", type=int, default=200)
    args = parser.parse_args(argv)
    sim = Sim()  # its own process, so the server's CPU is measured apart from ours
    try:
        print(f"server {sim.url} (pid {sim.proc.pid}); client: plain aiohttp, this process")
        asyncio.run(_bench(sim.url, sim.proc.pid, args.calls, args.concurrency))
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
