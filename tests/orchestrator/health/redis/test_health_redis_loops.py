"""Scripts that make one event loop per call (``run_sync``, ``asyncio.run``) while sharing a
RedisHealthStore with other processes: every process exits (issue 17, item 1)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from providers.simulator import SimulatedServer
from tests.orchestrator.health.redis.conftest import RedisServer

ROOT = Path(__file__).resolve().parents[4]
CHILD = "tests.orchestrator.health.redis.loops_child"


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    pipe = subprocess.PIPE
    return subprocess.Popen(args, cwd=ROOT, stdin=pipe, stdout=pipe, stderr=pipe)


@pytest.mark.parametrize("mode", ["run_sync", "asyncio.run"])
@pytest.mark.parametrize("processes", [2, 4])
def test_processes_calling_on_a_new_loop_each_time_all_exit(
    redis_server: RedisServer,
    simulated_server: SimulatedServer,
    prefix: str,
    mode: str,
    processes: int,
) -> None:
    # On Python 3.11 redis-py's write (asyncio.wait_for) could drop the cancellation that
    # asyncio.run's teardown sends the store's sync task, which then ran for ever: the loop
    # never closed (on main 2 of 2 and 4 of 4 processes hung, in both modes).
    args = [sys.executable, "-m", CHILD, redis_server.url, prefix, simulated_server.openai_url]
    children = [_start([*args, mode, "20"]) for _ in range(processes)]
    hung = 0
    try:
        for child in children:  # imports take seconds on a loaded machine: not what is timed
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline() == b"ready\n"
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            child.stdin.flush()
        deadline = time.monotonic() + 10.0
        for child in children:
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                hung += 1
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            out, err = child.communicate(timeout=10)
            assert hung or (child.returncode, out) == (0, b"done\n"), err.decode()[-2000:]
    assert hung == 0, f"{hung} of {processes} processes still running 10 s after they started"
