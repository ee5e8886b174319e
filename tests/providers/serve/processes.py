"""``failover serve`` as a real program for the tests: a child process on a free port."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from providers import SimulatedServer
from tests.conftest import write_chain
from tests.providers.serve.conftest import current_server

#: The issue's chain: the simulated Anthropic route first, the simulated OpenAI route second.
CHAIN = """
providers:
  claude: {type: anthropic, model: claude-sim, base_url: "${SIM}/anthropic", api_key: "${K}",
           allow_insecure_http: true}
  gpt: {type: openai, model: gpt-sim, base_url: "${SIM}/openai/v1", api_key: "${K}",
        allow_insecure_http: true}
agents:
  review: {providers: [claude, gpt], max_retries: 0, retry_strategy: none}
"""
UPSTREAM_KEY = "sk-sim-key-0123456789abcdef"
_COMMAND = (sys.executable, "-m", "providers.serve")


@asynccontextmanager
async def serving(
    sim: SimulatedServer,
    tmp_path: Path,
    *args: str,
    chain: str = CHAIN,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[subprocess.Popen[str], str]]:
    """``python -m providers.serve CHAIN --port 0 *args``; yields the process and its base URL
    once it answers ``/healthz``. ``${SIM}`` and ``${K}`` in ``chain`` are the simulator's URL
    and :data:`UPSTREAM_KEY`."""
    path = write_chain(tmp_path, chain)
    environ = {**os.environ, "SIM": sim.url, "K": UPSTREAM_KEY, "FAILOVER_GATEWAY_KEYS": ""}
    proc = subprocess.Popen(
        [*_COMMAND, str(path), "--port", "0", *args, "--server", current_server()],
        stdout=subprocess.PIPE,
        text=True,
        env={**environ, **(env or {})},
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
        if proc.poll() is None:  # SIGTERM: the supervisor stops its workers (SIGKILL would not)
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 30)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait()


async def worker_pids(url: str, want: int, within: float = 60.0) -> set[int]:
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
