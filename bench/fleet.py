"""Fleet benchmark: how many requests 10 processes send to a provider that is down.

A tiny HTTP server in this process plays the dead provider (every request gets
a 503) and counts what it receives. N worker processes (default 10) each start
one call every ``--interval`` seconds for ``--seconds`` (default 30). A call
asks the health store for admission, tries the dead provider with up to 2
retries (each retry asks the retry budget, 10 ms backoff), records each failure
and then falls over to a healthy provider (not simulated). Three set-ups:

- ``none``: no health store (every call pays 3 attempts),
- ``memory``: each process has its own ``MemoryHealthStore`` (learns alone),
- ``redis``: all share one ``RedisHealthStore`` (learn together).

Prints the upstream requests the dead provider received in each set-up.
Run: ``.venv/bin/python bench/fleet.py [--seconds 30] [--processes 10] [--cooldown 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import threading
import time
import uuid
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from health_store import free_port, redis_server

from orchestrator.health import (
    CircuitBreaker,
    HealthStore,
    MemoryHealthStore,
    RedisHealthStore,
)

_REPLY = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
)


class DeadProvider:
    """A keep-alive HTTP/1.1 server on loopback answering 503 to everything, counting requests."""

    def __init__(self) -> None:
        self.port = free_port()
        self.count = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DeadProvider:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", self.port))
        self._ready.set()
        loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                self.count += 1
                writer.write(_REPLY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def worker(mode: str, url: str, port: int, cooldown: float, seconds: float, interval: float,
           start: Any, start_id: str) -> None:  # fmt: skip
    asyncio.run(_worker(mode, url, port, cooldown, seconds, interval, start, start_id))


async def _worker(mode: str, url: str, port: int, cooldown: float, seconds: float,
                  interval: float, start: Any, start_id: str) -> None:  # fmt: skip
    import httpx

    # The consecutive rule (off by default): this bench compares how fast processes learn
    # together, and the default ratio rule would first need 100 calls in each window.
    circuit = CircuitBreaker(failure_threshold=3, cooldown=cooldown)
    store: HealthStore | None = None
    if mode == "memory":
        store = MemoryHealthStore(circuit=circuit)
    elif mode == "redis":
        store = RedisHealthStore(url, circuit=circuit, key_prefix=f"fleet:{start_id}:")
        store.admit("dead")  # start syncing before the clock starts
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        await asyncio.sleep(0.5)  # imported, connected, synced: now wait for the others
        await asyncio.to_thread(start.wait)
        end = time.monotonic() + seconds
        calls: set[asyncio.Task[None]] = set()
        while time.monotonic() < end:
            task = asyncio.create_task(_call(client, store))
            calls.add(task)
            task.add_done_callback(calls.discard)
            await asyncio.sleep(interval)
        await asyncio.gather(*calls)
    if store is not None:
        await store.aclose()


async def _call(client: Any, store: HealthStore | None) -> None:
    """One call: admission, up to 3 attempts on the dead provider, then the fallback."""
    if store is not None:
        store.record_request()
        if not store.admit("dead").allowed:
            return  # circuit open: straight to the fallback, no upstream request
    for attempt in range(3):
        response = await client.post("/v1/chat/completions", json={"model": "m"})
        if response.status_code < 500:
            return
        if store is not None:
            store.record_failure("dead")
            if attempt < 2 and not store.try_acquire_retry():
                return
            if store.admit("dead").state == "open":
                return  # our own failures just opened it: fall over now
        await asyncio.sleep(0.01)


def run(mode: str, url: str, args: argparse.Namespace) -> int:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(args.processes + 1)
    run_id = uuid.uuid4().hex[:8]  # each run starts from fresh shared state
    extra = (start, run_id)
    with DeadProvider() as dead:
        procs = [
            ctx.Process(
                target=worker,
                args=(mode, url, dead.port, args.cooldown, args.seconds, args.interval, *extra),
            )
            for _ in range(args.processes)
        ]
        for proc in procs:
            proc.start()
        start.wait()  # every process is ready: go
        for proc in procs:
            proc.join()
        time.sleep(0.2)
        return dead.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between calls")
    parser.add_argument("--cooldown", type=float, default=30.0)
    parser.add_argument("--modes", default="none,memory,redis")
    parser.add_argument("--url", default=None, help="use this Redis instead of starting one")
    args = parser.parse_args()
    calls = int(args.seconds / args.interval) * args.processes
    print(
        f"{args.processes} processes x {args.seconds:g} s, one call per {args.interval:g} s each "
        f"(~{calls} calls), cooldown {args.cooldown:g} s\n"
        "| health store           | upstream requests to the dead provider |\n"
        "|------------------------|----------------------------------------|"
    )
    with redis_server(args.url) as base_url:
        for mode in args.modes.split(","):
            count = run(mode, base_url, args)
            label = {"none": "none", "memory": "memory (per process)", "redis": "redis (shared)"}
            print(f"| {label[mode]:<22} | {count:>38} |", flush=True)


if __name__ == "__main__":
    main()
