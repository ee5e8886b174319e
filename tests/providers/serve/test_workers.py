"""``failover serve --workers N`` as a real program: SO_REUSEPORT workers, replacement, drain."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from providers import Fault, SimulatedServer
from tests.conftest import write_chain

CHAIN = """
providers:
  claude: {type: anthropic, model: claude-sim, base_url: "${SIM}/anthropic", api_key: "${K}",
           allow_insecure_http: true}
  gpt: {type: openai, model: gpt-sim, base_url: "${SIM}/openai/v1", api_key: "${K}",
        allow_insecure_http: true}
agents:
  review: {providers: [claude, gpt], max_retries: 0, retry_strategy: none}
"""
REQUEST = {"model": "review", "messages": [{"role": "user", "content": "hi"}]}


@asynccontextmanager
async def serving(
    sim: SimulatedServer, tmp_path: Path, *args: str
) -> AsyncIterator[tuple[subprocess.Popen[str], str]]:
    chain = write_chain(tmp_path, CHAIN)
    env = {**os.environ, "SIM": sim.url, "K": "sk-sim-key", "FAILOVER_GATEWAY_KEYS": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "providers.serve", str(chain), "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        assert line.startswith("failover serve: http://127.0.0.1:"), line
        url = line.split()[2]
        async with aiohttp.ClientSession() as http:
            for _ in range(200):
                try:
                    async with http.get(url + "/healthz") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


async def _pids(url: str, want: int, within: float = 60.0) -> set[int]:
    """Worker pids seen on fresh connections, until ``want`` are seen (workers start at their
    own pace on a loaded machine) or ``within`` seconds pass."""
    seen: set[int] = set()
    connector = aiohttp.TCPConnector(force_close=True)  # a new connection each: any worker
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession(connector=connector) as http:
        while len(seen) < want and time.monotonic() < deadline:
            try:
                async with http.get(url + "/healthz") as r:
                    seen.add((await r.json())["pid"])
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.01)
    return seen


async def test_sigterm_drains_in_flight_requests_then_exits_0(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("anthropic", Fault.status(529))
    sim.set_default("openai", Fault.delay(1.0, Fault.ok("late but whole")))
    async with serving(sim, tmp_path, "--workers", "2", "--grace", "20") as (proc, url):
        async with aiohttp.ClientSession() as http:

            async def one() -> tuple[int, str]:
                async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                    return r.status, (await r.json())["choices"][0]["message"]["content"]

            calls = [asyncio.create_task(one()) for _ in range(30)]
            while sim.in_flight < 30:
                await asyncio.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            results = await asyncio.gather(*calls)
        assert results == [(200, "late but whole")] * 30
        assert await asyncio.to_thread(proc.wait, 30) == 0


async def test_a_killed_worker_is_replaced(sim: SimulatedServer, tmp_path: Path) -> None:
    async with serving(sim, tmp_path, "--workers", "2") as (proc, url):
        first = await _pids(url, 2)
        assert len(first) == 2
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        # The survivor and the replacement (a killed process answers nothing).
        replaced = await _pids(url, 2, within=90.0)
        assert victim not in replaced and len(replaced) == 2
        async with aiohttp.ClientSession() as http:
            for _ in range(10):
                async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                    assert r.status == 200
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0
