"""Health-store benchmark: the time the store adds to one call, memory vs Redis on loopback.

Per simulated call the engine makes three store calls on its hot path:
``admit`` + ``record_success`` + ``record_request``. This script times those
three together, call by call, for ``MemoryHealthStore`` and for
``RedisHealthStore`` (with its background sync running in the same event
loop), and prints p50 / p99 / max in microseconds. A second column times the
same calls plus one ``await asyncio.sleep(0)``, the loop turn in which the
Redis store's background sync may run, so its share of the loop shows too.

Starts its own ``redis-server`` (``/usr/bin/redis-server``, no persistence) on a
free loopback port unless ``--url`` is given.
Run: ``.venv/bin/python bench/health_store.py [--calls 20000] [--url redis://...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from orchestrator.health import (
    HealthStore,
    MemoryHealthStore,
    RedisHealthStore,
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def redis_server(url: str | None) -> Iterator[str]:
    """Yield a Redis URL: ``url`` as given, or a throwaway local redis-server's."""
    if url is not None:
        yield url
        return
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(binary):
        sys.exit("redis-server not found: apt-get install redis-server (or pass --url)")
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit("redis-server did not start")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(store: HealthStore, calls: int) -> tuple[list[float], list[float]]:
    """Per-call microseconds: (the three store calls, the same plus one loop turn)."""
    bare: list[float] = []
    with_turn: list[float] = []
    clock = time.perf_counter
    for _ in range(2000):  # warm-up: starts the sync task, fills caches
        store.admit("primary")
        store.record_success("primary")
        store.record_request()
        await asyncio.sleep(0)
    for _ in range(calls):
        start = clock()
        store.admit("primary")
        store.record_success("primary")
        store.record_request()
        mid = clock()
        await asyncio.sleep(0)
        end = clock()
        bare.append((mid - start) * 1e6)
        with_turn.append((end - start) * 1e6)
    return bare, with_turn


def row(name: str, bare: list[float], turn: list[float]) -> str:
    cells = [percentile(bare, 0.5), percentile(bare, 0.99), max(bare)]
    cells += [percentile(turn, 0.5), percentile(turn, 0.99)]
    return f"| {name:<8} | " + " | ".join(f"{v:10.1f}" for v in cells) + " |"


async def main_async(calls: int, url: str) -> None:
    print(
        "| store    | p50 us     | p99 us     | max us     | p50+turn   | p99+turn   |\n"
        "|----------|------------|------------|------------|------------|------------|"
    )
    memory = MemoryHealthStore()
    print(row("memory", *await measure(memory, calls)))
    redis_store = RedisHealthStore(url, key_prefix=f"bench:{uuid.uuid4().hex[:8]}:")
    try:
        bare, turn = await measure(redis_store, calls)
        print(row("redis", bare, turn))
    finally:
        await redis_store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--url", default=None, help="use this Redis instead of starting one")
    args = parser.parse_args()
    with redis_server(args.url) as url:
        asyncio.run(main_async(args.calls, url))


if __name__ == "__main__":
    main()
