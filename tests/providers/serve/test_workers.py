"""``failover serve --workers N`` as a real program: SO_REUSEPORT workers, replacement, drain."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from providers import Fault, SimulatedServer
from tests.conftest import write_chain
from tests.providers.serve.processes import CHAIN, UPSTREAM_KEY, serving, worker_pids

REQUEST = {"model": "review", "messages": [{"role": "user", "content": "hi"}]}


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
        first = await worker_pids(url, 2)
        assert len(first) == 2
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        # The survivor and the replacement (a killed process answers nothing).
        replaced = await worker_pids(url, 2, within=90.0)
        assert victim not in replaced and len(replaced) == 2
        async with aiohttp.ClientSession() as http:
            for _ in range(10):
                async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                    assert r.status == 200
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    return True


async def test_workers_do_not_outlive_a_killed_supervisor(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    # SIGKILL leaves the supervisor no time to stop its workers: they must notice alone,
    # or they keep the port and the provider keys of a gateway nobody supervises.
    async with serving(sim, tmp_path, "--workers", "2") as (proc, url):
        workers = await worker_pids(url, 2)
        assert len(workers) == 2
        proc.kill()
        await asyncio.to_thread(proc.wait, 30)
        try:
            for _ in range(600):
                if not any(_alive(pid) for pid in workers):
                    break
                await asyncio.sleep(0.05)
            assert not any(_alive(pid) for pid in workers), "orphan workers still running"
        finally:
            for pid in workers:  # the test started them: never leave one behind
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


async def test_the_url_is_announced_once_a_worker_accepts(
    sim: SimulatedServer, tmp_path: Path, server: str
) -> None:
    # Announced before any worker listened, the first ~1.3 s of connects were refused.
    path = write_chain(tmp_path, CHAIN)
    env = {**os.environ, "SIM": sim.url, "K": UPSTREAM_KEY, "FAILOVER_GATEWAY_KEYS": ""}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "providers.serve",
            str(path),
            "--port",
            "0",
            "--workers",
            "2",
            "--server",
            server,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        url = line.split()[2]
        async with aiohttp.ClientSession() as http, http.get(url + "/readyz") as r:
            assert (r.status, (await r.json())["status"]) == (200, "ready")
    finally:
        proc.terminate()
        try:
            await asyncio.to_thread(proc.wait, 30)
        finally:
            proc.kill()  # a no-op once it has exited
    assert proc.returncode == 0
