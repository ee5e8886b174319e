"""The provider benchmark: FallbackAgent (on each transport) vs hand-written client loops.

Two simulated OpenAI-compatible servers (primary, secondary) run in their own
processes, so the client side measured here is the only thing in this process.
Each scenario interleaves the implementations round by round: loops written by
hand on httpx, aiohttp and pyreqwest (``aiohttp-stream`` and ``reqwest-stream``: the
same loops asking for ``stream: true`` and reading the SSE to its end, the floor of a
streamed call), and the agent on the default aiohttp transport and on
``transport="reqwest"`` (when pyreqwest, the ``[fast]`` extra, is installed);
figures are reported as ratios to the httpx baseline and to the aiohttp floor of
the same run.

    python bench/providers_bench.py [--rounds 5] [--quick]

S1 healthy primary, sequential       S2 primary 503 then secondary, no retries
S3 primary hangs, attempt timeout 0.25 s
S4 200 concurrent calls, healthy     S5 200 concurrent, 30% 503 on the primary
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx

from orchestrator import FallbackAgent
from providers import OpenAIChat

KEY = "sk-bench-not-a-real-key"
BODY = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
STREAM_BODY = {**BODY, "stream": True, "stream_options": {"include_usage": True}}
HEADERS = {"Authorization": f"Bearer {KEY}"}
TIMEOUT = 0.25


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Sim:
    """One simulator process, driven through its /_sim control routes."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "providers.simulator", "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                self._get("/_sim/counts")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("simulator did not start")

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as r:
            return json.loads(r.read())

    def _post(self, path: str, body: Any) -> None:
        req = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"content-type": "application/json"},
        )
        urllib.request.urlopen(req, timeout=5).read()

    def default(self, spec: Any) -> None:
        self._post("/_sim/reset", {})
        self._post("/_sim/script", {"defaults": {"openai": spec}})

    def count(self) -> int:
        n: int = self._get("/_sim/counts")["openai"]
        return n

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    cpu: float = 0.0
    wall: float = 0.0
    calls: int = 0
    failures: int = 0
    upstream: int = 0

    def p(self, q: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


Call = Callable[[], Awaitable[str]]
Errors = type[BaseException] | tuple[type[BaseException], ...]


def falling_over(
    one: Callable[[str, Any], Awaitable[str]], urls: tuple[str, str], first: Any, errors: Errors
) -> Call:
    """What a user writes by hand: ``one(primary, first)``, and on any of ``errors``
    ``one(secondary, None)`` (``first``: the primary's limit when it hangs)."""

    async def call() -> str:
        try:
            return await one(urls[0], first)
        except errors:
            return await one(urls[1], None)

    return call


async def timed(call: Call, tally: Tally) -> None:
    t0 = time.perf_counter()
    try:
        await call()
    except Exception:
        tally.failures += 1
    tally.latencies.append(time.perf_counter() - t0)


async def batch(call: Call, n: int, concurrent: bool, tally: Tally) -> None:
    c0, w0 = time.process_time(), time.perf_counter()
    if concurrent:
        await asyncio.gather(*(timed(call, tally) for _ in range(n)))
    else:
        for _ in range(n):
            await timed(call, tally)
    tally.cpu += time.process_time() - c0
    tally.wall += time.perf_counter() - w0
    tally.calls += n


def httpx_impl(client: httpx.AsyncClient, primary: str, secondary: str, hang: bool) -> Call:
    """What a user writes by hand: try the primary, on any error call the secondary."""

    async def one(url: str, timeout: float | None) -> str:
        kw: dict[str, Any] = {"timeout": timeout} if timeout else {}
        r = await client.post(url + "/openai/v1/chat/completions", json=BODY, headers=HEADERS, **kw)
        r.raise_for_status()
        text: str = r.json()["choices"][0]["message"]["content"]
        return text

    urls, first = (primary, secondary), TIMEOUT if hang else None
    return falling_over(one, urls, first, (httpx.HTTPError, KeyError, ValueError))


def sse_text(lines: list[bytes]) -> str:
    """The text of an OpenAI stream's ``data:`` lines, as a hand-written reader takes it."""
    parts: list[str] = []
    for line in lines:
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            for choice in json.loads(line[6:])["choices"]:
                parts.append(choice["delta"].get("content") or "")
    return "".join(parts)


def aiohttp_impl(
    session: aiohttp.ClientSession, primary: str, secondary: str, hang: bool, stream: bool = False
) -> Call:
    """The hand-written aiohttp loop; ``stream``: asking for ``stream: true`` and reading the
    SSE body to its end (the floor of a streamed call, what hedging at first content needs)."""

    async def one(url: str, timeout: float | None) -> str:
        kw: dict[str, Any] = {"timeout": aiohttp.ClientTimeout(total=timeout)} if timeout else {}
        async with session.post(
            url + "/openai/v1/chat/completions",
            json=STREAM_BODY if stream else BODY,
            headers=HEADERS,
            **kw,
        ) as r:
            r.raise_for_status()
            if stream:
                return sse_text([line.rstrip(b"\r\n") async for line in r.content])
            data = await r.json()
            text: str = data["choices"][0]["message"]["content"]
            return text

    urls, first = (primary, secondary), TIMEOUT if hang else None
    return falling_over(one, urls, first, (TimeoutError, aiohttp.ClientError, KeyError, ValueError))


def reqwest_impl(client: Any, primary: str, secondary: str, hang: bool) -> Call:
    """The aiohttp loop written on a ``pyreqwest`` client (a Rust floor)."""
    from datetime import timedelta

    from pyreqwest.exceptions import PyreqwestError

    limit = timedelta(seconds=TIMEOUT)

    async def one(url: str, hung: bool | None) -> str:
        builder = client.post(url + "/openai/v1/chat/completions").body_json(BODY)
        builder = builder.headers(HEADERS).error_for_status()
        r = await (builder.timeout(limit) if hung else builder).build().send()
        text: str = (await r.json())["choices"][0]["message"]["content"]
        return text

    urls = (primary, secondary)
    return falling_over(one, urls, hang or None, (PyreqwestError, KeyError, ValueError))


def reqwest_stream_impl(client: Any, primary: str, secondary: str, hang: bool) -> Call:
    """The streamed floor on a ``pyreqwest`` client: ``stream: true``, the SSE read to its end."""
    from datetime import timedelta

    from pyreqwest.exceptions import PyreqwestError

    limit = timedelta(seconds=TIMEOUT)

    async def one(url: str, hung: bool | None) -> str:
        builder = client.post(url + "/openai/v1/chat/completions").body_json(STREAM_BODY)
        builder = builder.headers(HEADERS).error_for_status().streamed_read_buffer_limit(0)
        async with (builder.timeout(limit) if hung else builder).build_streamed() as r:
            body = bytearray()
            while (chunk := await r.body_reader.read_chunk()) is not None:
                body += chunk.to_bytes()
        return sse_text(bytes(body).split(b"\n"))

    urls = (primary, secondary)
    return falling_over(one, urls, hang or None, (PyreqwestError, KeyError, ValueError))


def agent_impl(
    primary: str, secondary: str, hang: bool, transport: str | None = None, *, hedged: bool = True
) -> Call:
    """``FallbackAgent`` + ``OpenAIChat``; ``hedged=False``: ``hedge_after=None`` (a ``run``
    is then one non-streamed POST, as a hedge on whole-reply latency would keep it)."""
    kw: dict[str, Any] = {"api_key": KEY, "transport": transport}
    agent = FallbackAgent(
        [
            OpenAIChat("m", base_url=primary + "/openai/v1", name="primary", **kw),
            OpenAIChat("m", base_url=secondary + "/openai/v1", name="secondary", **kw),
        ],
        max_retries=0,
        attempt_timeout=TIMEOUT if hang else None,
        hedge_after="auto" if hedged else None,
    )

    async def call() -> str:
        return (await agent.run("ping")).text

    return call


SCENARIOS = {
    # name: (primary fault spec, calls per batch, concurrent)
    "S1": ("ok", 300, False),
    "S2": ({"status": 503}, 300, False),
    "S3": ("hang", 6, False),
    "S4": ("ok", 200, True),
    "S5": ({"flaky": 0.3, "seed": 7, "fault": {"status": 503}}, 200, True),
}
try:
    import pyreqwest.client as _pyreqwest
except ImportError:  # the [fast] extra is not installed: the reqwest columns are left out
    _pyreqwest = None  # type: ignore[assignment]
IMPLS = ("httpx", "aiohttp", "aiohttp-stream", "agent") + (
    ("reqwest", "reqwest-stream", "agent+reqwest") if _pyreqwest else ()
)
#: With ``--unhedged``: the agent with ``hedge_after=None`` too (one non-streamed POST per run).
UNHEDGED = ("agent unhedged",) + (("agent+reqwest unhedged",) if _pyreqwest else ())


async def run_scenario(
    name: str, sims: tuple[Sim, Sim], rounds: int, impls: tuple[str, ...] = IMPLS
) -> dict[str, Tally]:
    spec, n, concurrent = SCENARIOS[name]
    primary, secondary = sims
    hang = name == "S3"
    primary.default(spec)
    secondary.default("ok")
    client = httpx.AsyncClient()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    calls = {
        "httpx": httpx_impl(client, primary.url, secondary.url, hang),
        "aiohttp": aiohttp_impl(session, primary.url, secondary.url, hang),
        "aiohttp-stream": aiohttp_impl(session, primary.url, secondary.url, hang, stream=True),
        "agent": agent_impl(primary.url, secondary.url, hang),
    }
    rq = _pyreqwest.ClientBuilder().no_proxy().build() if _pyreqwest else None
    if rq is not None:
        calls["reqwest"] = reqwest_impl(rq, primary.url, secondary.url, hang)
        calls["reqwest-stream"] = reqwest_stream_impl(rq, primary.url, secondary.url, hang)
        calls["agent+reqwest"] = agent_impl(primary.url, secondary.url, hang, "reqwest")
    for k in UNHEDGED:
        transport = "reqwest" if "reqwest" in k else None
        calls[k] = agent_impl(primary.url, secondary.url, hang, transport, hedged=False)
    tallies = {k: Tally() for k in impls}
    try:
        for k in impls:  # warm up connections and code paths
            await batch(calls[k], min(n, 20), concurrent, Tally())
        for _ in range(rounds):
            for k in impls:
                before = primary.count() + secondary.count()
                await batch(calls[k], n, concurrent, tallies[k])
                tallies[k].upstream += primary.count() + secondary.count() - before
    finally:
        await client.aclose()
        await session.close()
        if rq is not None:
            await rq.close()
    return tallies


def import_time() -> float:
    code = (
        "import time; t=time.perf_counter(); import orchestrator, providers; "
        "print(time.perf_counter()-t)"
    )
    runs = [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(5)]
    return statistics.median(runs)


def report(results: dict[str, dict[str, Tally]]) -> str:
    rows = [
        "| scenario | impl | median ms | p99 ms | CPU us/call | calls/s | CPU x httpx "
        "| CPU x aiohttp | calls/s x httpx | calls/s x aiohttp | p99 x httpx | upstream/call "
        "| failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tallies in results.items():
        base, floor = tallies["httpx"], tallies["aiohttp"]
        for k in tallies:
            t = tallies[k]
            cpu = t.cpu / t.calls * 1e6
            rate = t.calls / t.wall
            cpu_base, cpu_floor = base.cpu / base.calls * 1e6, floor.cpu / floor.calls * 1e6
            rate_base, rate_floor = base.calls / base.wall, floor.calls / floor.wall
            rows.append(
                f"| {name} | {k} | {t.p(0.5):.2f} | {t.p(0.99):.2f} | {cpu:.0f} | {rate:.0f} "
                f"| {cpu / cpu_base:.2f} | {cpu / cpu_floor:.2f} "
                f"| {rate / rate_base:.2f} | {rate / rate_floor:.2f} "
                f"| {t.p(0.99) / base.p(0.99):.2f} | {t.upstream / t.calls:.2f} | {t.failures} |"
            )
    return "\n".join(rows)


async def main(rounds: int, only: list[str], impls: tuple[str, ...] = IMPLS) -> None:
    sims = (Sim(), Sim())
    try:
        results = {}
        for name in only:
            results[name] = await run_scenario(name, sims, rounds if name != "S3" else 2, impls)
            print(f"{name} done", file=sys.stderr)
    finally:
        for s in sims:
            s.close()
    print(report(results))
    ms = import_time() * 1000
    print(f"\nimport orchestrator, providers: {ms:.0f} ms (median of 5, target < 300)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scenarios", default="S1,S2,S3,S4,S5")
    ap.add_argument("--unhedged", action="store_true", help="also the agent with hedge_after=None")
    args = ap.parse_args()
    impls = IMPLS + (UNHEDGED if args.unhedged else ())
    asyncio.run(main(args.rounds, args.scenarios.split(","), impls))
