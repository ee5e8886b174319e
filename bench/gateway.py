"""The gateway benchmark: `failover serve` against an aiohttp pass-through floor, same run.

    python bench/gateway.py [--seconds 5] [--only throughput,latency,...]

Processes: the simulated provider server (upstream) and this load generator share
CPU 1; the server under test (the gateway, or the floor) runs alone on CPU 0
(``taskset``). The load generator speaks raw HTTP/1.1 over keep-alive sockets
(uvloop when installed) so that it is not the bottleneck. Scenarios:

servers     the issue-22 report, one run: req/s, server CPU per request and p50/p99 of the
            aiohttp pass-through, the granian + pyreqwest pass-through (the new floor), the
            gateway on each server, and on granian with its providers on ``transport:
            reqwest`` (50 connections, one worker pinned to CPU 0, metrics on);
            then per server the added p50/p99 at 1,000 req/s (open loop) over the simulator
            direct (and on granian with reqwest upstream), and 512 concurrent SSE streams
            through one worker (stalls > 100 ms); ``--rounds N`` measures the five servers in
            N interleaved rounds and reports the medians of the per-round ratios
sse         the servers report's SSE check alone: 512 concurrent streams straight to the
            simulator, then through one worker on each server
interfaces  granian's RSGI vs ASGI interface: each answering a fixed reply, 50 connections
overhead    50 keep-alive connections, no upstream: the gateway over a function provider vs an
            aiohttp handler that parses the body and answers a fixed reply
throughput  50 keep-alive connections, closed loop: requests/s and server CPU per request,
            the gateway (one worker) vs the floor (aiohttp server + one shared ClientSession)
failover    the same with 30% upstream 503s: the gateway's chain falls over to a second
            route (zero failed client requests expected); the floor passes the 503s on
latency     open loop at 1,000 requests/s (``--rate``): p50/p99 through the gateway (on
            ``--server``) and direct
sequential  one request at a time: p50/p99 direct, through the floor, through the gateway
sigterm     2 workers, 100 connections, upstream 0.2 s: SIGTERM mid-load; every request
            the gateway forwarded upstream must be answered
sigkill     4 workers, 200 connections, upstream 0.2 s: SIGKILL one worker; only its
            in-flight requests may fail, and it is replaced
slowloris   1,000 connections trickling header lines while 50 normal clients run
litellm     with ``--litellm BIN``: LiteLLM's proxy, one worker, same routes and loads
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from edges import sse_storm, stream_body
from providers_bench import free_port

ROOT = Path(__file__).resolve().parent.parent
BODY = json.dumps({"model": "direct", "messages": [{"role": "user", "content": "ping"}]}).encode()
CHAIN = """
providers:
  gpt: {type: openai, model: gpt-sim, base_url: "${SIM}/openai/v1", api_key: "${K}",
        allow_insecure_http: true}
  claude: {type: anthropic, model: claude-sim, base_url: "${SIM}/anthropic", api_key: "${K}",
           allow_insecure_http: true}
agents:
  direct: {providers: [gpt], max_retries: 0, retry_strategy: none}
  fallback: {providers: [gpt, claude], max_retries: 0, retry_strategy: none}
"""


# `overhead`: the gateway over a function provider vs an aiohttp handler that parses the body
# and answers a fixed reply: what the gateway and the engine cost, with no upstream at all.
FUNCTION_CHAIN = """
providers:
  fn: {type: function, path: "bench_reply:reply", run_in_thread: false}
agents:
  direct: {providers: [fn], max_retries: 0, retry_strategy: none}
"""
FUNCTION = "async def reply(request):\n    return 'pong'\n"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """Child processes of ``pid`` (multiprocessing's resource tracker included)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def workers_of(pid: int) -> list[int]:
    """The gateway's worker processes (not multiprocessing's resource tracker)."""
    return [c for c in children(pid) if b"resource_tracker" not in _cmdline(c)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def wait_http(url: str, tries: int = 400) -> None:
    for _ in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer")


class Sim:
    """The simulated provider server in its own process, on CPU 1."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "providers.simulator", "--port", str(self.port)]
        self.proc = subprocess.Popen(["taskset", "-c", "1", *cmd], stdout=subprocess.DEVNULL)
        wait_http(self.url + "/_sim/counts")

    def post(self, path: str, body: Any) -> None:
        data = json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    def defaults(self, spec: dict[str, Any]) -> None:
        self.post("/_sim/reset", {})
        self.post("/_sim/script", {"defaults": spec})

    def count(self, route: str) -> int:
        with urllib.request.urlopen(self.url + "/_sim/counts", timeout=5) as r:
            n: int = json.loads(r.read())[route]
            return n

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class Server:
    """A server under test: the gateway (``--workers N``) or the floor, pinned when asked."""

    def __init__(
        self, argv: list[str], cpu: str | None, env: dict[str, str], health: str = "/healthz"
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        pin = ["taskset", "-c", cpu] if cpu else []
        self.proc = subprocess.Popen(
            [*pin, *argv, "--port", str(self.port)], env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        wait_http(self.url + health, tries=1200)

    def cpu(self) -> float:
        return sum(cpu_seconds(p) for p in [self.proc.pid, *children(self.proc.pid)])

    def close(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


def gateway(
    sim: Sim, chain: Path, cpu: str | None = "0", workers: int = 1, server: str = "aiohttp"
) -> Server:
    argv = [sys.executable, "-m", "providers.serve", str(chain), "--workers", str(workers)]
    argv += ["--server", server, "--max-in-flight", "1024"]
    return Server(argv, cpu, {"SIM": sim.url, "K": "sk-bench", "FAILOVER_GATEWAY_KEYS": ""})


def floor(sim: Sim) -> Server:
    argv = [sys.executable, str(Path(__file__).resolve()), "--floor", sim.url]
    return Server(argv, "0", {})


def granian_floor(sim: Sim) -> Server:
    """The granian + pyreqwest pass-through (bench/edges.py)."""
    argv = [sys.executable, str(Path(__file__).resolve().parent / "edges.py")]
    return Server([*argv, "--granian-floor", sim.url], "0", {})


# -- the floor: an aiohttp pass-through proxy -------------------------------------------


def run_floor(upstream: str, port: int) -> None:
    """Forward each POST body to upstream's OpenAI route with one shared session."""
    import aiohttp
    from aiohttp import web

    target = upstream + "/openai/v1/chat/completions"

    async def forward(request: web.Request) -> web.Response:
        body = await request.read()
        session: aiohttp.ClientSession = request.app["session"]
        async with session.post(
            target, data=body, headers={"content-type": "application/json"}
        ) as r:
            data = await r.read()
            return web.Response(status=r.status, body=data, content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def session(app: web.Application) -> Any:
        app["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        yield
        await app["session"].close()

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.router.add_post("/v1/chat/completions", forward)
    app.router.add_get("/healthz", health)
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def run_trivial(port: int) -> None:
    """Parse the body, answer a fixed chat completion: the least an endpoint can do."""
    from aiohttp import web

    reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": "pong"}}]})

    async def answer(request: web.Request) -> web.Response:
        json.loads(await request.read())
        return web.Response(text=reply, content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    app.router.add_get("/healthz", health)
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# -- the load generator: raw HTTP/1.1 over keep-alive sockets ---------------------------


@dataclass
class Tally:
    ok: int = 0
    failed: int = 0  # an error status, or the connection broke with a request outstanding
    statuses: dict[int, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def p(self, q: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


def request_bytes(
    model: str = "direct", path: str = "/v1/chat/completions", key: str | None = None
) -> bytes:
    body = BODY.replace(b'"direct"', json.dumps(model).encode())
    head = f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    if key is not None:
        head += f"Authorization: Bearer {key}\r\n"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, req: bytes) -> int:
    writer.write(req)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    await reader.readexactly(length)
    return status


async def closed_loop(url: str, conns: int, seconds: float, req: bytes, tally: Tally) -> None:
    port = int(url.rsplit(":", 1)[1])
    end = time.perf_counter() + seconds

    async def client() -> None:
        while time.perf_counter() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.01)
                continue
            try:
                while time.perf_counter() < end:
                    t0 = time.perf_counter()
                    status = await exchange(reader, writer, req)
                    tally.statuses[status] = tally.statuses.get(status, 0) + 1
                    tally.latencies.append(time.perf_counter() - t0)
                    if status == 200:
                        tally.ok += 1
                    else:
                        tally.failed += 1
            except (OSError, asyncio.IncompleteReadError):
                tally.failed += 1
            finally:
                writer.close()

    await asyncio.gather(*(client() for _ in range(conns)))


async def open_loop(url: str, rate: float, seconds: float, req: bytes) -> Tally:
    """Send at a fixed rate over a pool of connections; latency counts from the scheduled
    send time, so a stall shows in the figures (no coordinated omission)."""
    port = int(url.rsplit(":", 1)[1])
    tally = Tally()
    pool: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def one(scheduled: float) -> None:
        conn = pool.pop() if pool else await asyncio.open_connection("127.0.0.1", port)
        try:
            status = await exchange(*conn, req)
        except (OSError, asyncio.IncompleteReadError):
            tally.failed += 1
            return
        tally.latencies.append(time.perf_counter() - scheduled)
        tally.ok += status == 200
        pool.append(conn)

    start = time.perf_counter()
    tasks = []
    for i in range(int(rate * seconds)):
        at = start + i / rate
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(at)))
    await asyncio.gather(*tasks)
    for _, writer in pool:
        writer.close()
    return tally


# -- scenarios ---------------------------------------------------------------------------


async def measure(server: Server, conns: int, seconds: float, req: bytes) -> dict[str, Any]:
    await closed_loop(server.url, conns, 0.5, req, Tally())  # warm-up: connect, import, JIT-free
    tally = Tally()
    cpu0, t0 = server.cpu(), time.perf_counter()
    await closed_loop(server.url, conns, seconds, req, tally)
    wall, cpu = time.perf_counter() - t0, server.cpu() - cpu0
    done = tally.ok + tally.failed
    return {
        "rps": done / wall,
        "cpu_us": cpu / max(done, 1) * 1e6,
        "p50": tally.p(0.5),
        "p99": tally.p(0.99),
        "ok": tally.ok,
        "failed": tally.failed,
    }


async def throughput(sim: Sim, chain: Path, seconds: float, flaky: bool) -> list[dict[str, Any]]:
    spec = {"flaky": 0.3, "seed": 7, "fault": {"status": 503}} if flaky else {"ok": None}
    sim.defaults({"openai": spec} if flaky else {})
    rows = []
    for name, start, model in (("floor", lambda: floor(sim), "direct"),
                               ("gateway", lambda: gateway(sim, chain),
                                "fallback" if flaky else "direct")):  # fmt: skip
        server = start()
        try:
            row = await measure(server, 50, seconds, request_bytes(model))
        finally:
            server.close()
        rows.append({"server": name, **row})
    return rows


SERVERS = ("aiohttp", "granian")


def _per_round_ratios(runs: dict[str, list[dict[str, Any]]], rounds: int) -> dict[str, Any]:
    """Each server's last run, with its req/s and CPU ratios to the aiohttp pass-through:
    of that run alone, or (``rounds`` > 1) the medians of the per-round ratios."""
    base = runs["aiohttp pass-through"]
    rows: dict[str, dict[str, Any]] = {}
    for name, measured in runs.items():
        rps = [m["rps"] / b["rps"] for m, b in zip(measured, base, strict=True)]
        cpu = [m["cpu_us"] / b["cpu_us"] for m, b in zip(measured, base, strict=True)]
        rows[name] = {**measured[-1], "rps_vs_aiohttp_pass_through": statistics.median(rps),
                      "cpu_vs_aiohttp_pass_through": statistics.median(cpu)}  # fmt: skip
        if rounds > 1:
            rows[name]["rounds_rps_vs"] = [round(x, 2) for x in rps]
            rows[name]["rounds_cpu_vs"] = [round(x, 2) for x in cpu]
    return rows


async def servers(
    sim: Sim, chain: Path, seconds: float, rate: float, rounds: int = 1
) -> dict[str, Any]:
    """The issue-22 report (see the module docstring). With ``rounds`` > 1 every server stays
    up and each round measures them all in turn (the order rotated a place each round), so a
    row's ratios to the aiohttp pass-through are taken within a round; the medians are the
    figure (a shared machine's load moves the pass-through's own CPU per request by 1.3x
    between runs minutes apart)."""
    sim.defaults({})
    starts = {
        "aiohttp pass-through": lambda: floor(sim),
        "granian+pyreqwest pass-through": lambda: granian_floor(sim),
        **{f"gateway on {s}": (lambda s=s: gateway(sim, chain, server=s)) for s in SERVERS},
        "gateway on granian, reqwest upstream": lambda: gateway(
            sim, reqwest_chain(chain), server="granian"
        ),
    }
    names = list(starts)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    up: dict[str, Server] = {}
    try:
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                server = up.get(name) or starts[name]()
                try:
                    runs[name].append(await measure(server, 50, seconds, request_bytes()))
                finally:
                    if rounds > 1:
                        up[name] = server
                    else:
                        server.close()
                prefix = f"round {r}: " if rounds > 1 else ""
                print(" ", prefix + name, json.dumps(runs[name][-1], default=_round), flush=True)
    finally:
        for server in up.values():
            server.close()
    rows = _per_round_ratios(runs, rounds)
    report: dict[str, Any] = {"throughput": rows, "sse direct": await sse(sim, chain, None)}
    for s in SERVERS:
        report[f"latency on {s}"] = await latency(sim, chain, seconds, rate, server=s)
        report[f"sse on {s}"] = await sse(sim, chain, server=s)
    report["latency on granian, reqwest upstream"] = await latency(
        sim, reqwest_chain(chain), seconds, rate, server="granian"
    )
    return report


def reqwest_chain(chain: Path) -> Path:
    """``chain`` with every provider on ``transport: reqwest`` (pyreqwest, the [fast] extra)."""
    path = chain.with_name("chain_reqwest.yaml")
    mine = "allow_insecure_http: true, transport: reqwest}"
    path.write_text(chain.read_text().replace("allow_insecure_http: true}", mine))
    return path


async def sse_check(sim: Sim, chain: Path) -> dict[str, Any]:
    """The SSE check of ``servers`` alone: direct, then on each server."""
    report = {"direct": await sse(sim, chain, None)}
    for s in SERVERS:
        report[s] = await sse(sim, chain, server=s)
    return report


async def interfaces(seconds: float) -> dict[str, Any]:
    """granian's two interfaces for Python, with nothing else: req/s and CPU per request."""
    edges = [sys.executable, str(Path(__file__).resolve().parent / "edges.py")]
    rows = {}
    for interface in ("rsgi", "asgi"):
        server = Server([*edges, "--granian-trivial", interface], "0", {})
        try:
            rows[interface] = await measure(server, 50, seconds, request_bytes())
        finally:
            server.close()
    return rows


async def sse(sim: Sim, chain: Path, server: str | None, streams: int = 512) -> dict[str, Any]:
    """``streams`` concurrent streams through one worker (``server``; ``None``: straight to
    the simulator, what the load generator and the simulator alone allow), the upstream
    sending a chunk every 0.2 s: a stream whose chunks arrive more than 100 ms later than
    that stalled."""
    interval = 0.2
    sim.defaults({"openai": {"ok": {"chunks": 10, "interval": interval}}})
    if server is None:
        path = "/openai/v1/chat/completions"
        try:
            return await sse_storm(sim.port, streams, stream_body(), interval, path)
        finally:
            sim.defaults({})
    gw = gateway(sim, chain, server=server)
    try:
        return await sse_storm(gw.port, streams, stream_body(), interval)
    finally:
        gw.close()
        sim.defaults({})


async def overhead(tmp: Path, seconds: float) -> list[dict[str, Any]]:
    (tmp / "bench_reply.py").write_text(FUNCTION)
    chain = tmp / "function.yaml"
    chain.write_text(FUNCTION_CHAIN)
    servers = {
        "aiohttp handler": [sys.executable, str(Path(__file__).resolve()), "--trivial"],
        "gateway + function provider": [sys.executable, "-m", "providers.serve", str(chain)],
    }
    rows = []
    for name, argv in servers.items():
        server = Server(argv, "0", {})
        try:
            rows.append({"server": name, **await measure(server, 50, seconds, request_bytes())})
        finally:
            server.close()
    return rows


LITELLM = """
model_list:
  - model_name: direct
    litellm_params: {{model: openai/gpt-sim, api_base: "{sim}/openai/v1", api_key: sk-bench}}
  - model_name: backup
    litellm_params: {{model: anthropic/claude-sim, api_base: "{sim}/anthropic", api_key: sk-bench}}
litellm_settings: {{num_retries: 0, request_timeout: 30}}
router_settings: {{num_retries: 0, fallbacks: [{{direct: [backup]}}]}}
"""


LITELLM_KEY = "sk-bench-master-key-0123456789abcdef"


async def litellm(sim: Sim, tmp: Path, binary: str, seconds: float) -> list[dict[str, Any]]:
    """LiteLLM's proxy (one worker, CPU 0) on the same routes: healthy, then 30% 503s."""
    config = tmp / "litellm.yaml"
    config.write_text(LITELLM.format(sim=sim.url))
    argv = [binary, "--config", str(config), "--num_workers", "1"]
    rows = []
    for flaky in (False, True):
        spec = {"flaky": 0.3, "seed": 7, "fault": {"status": 503}}
        sim.defaults({"openai": spec} if flaky else {})
        env = {"LITELLM_MASTER_KEY": LITELLM_KEY}
        server = Server(argv, "0", env, health="/health/liveliness")
        try:
            row = await measure(server, 50, seconds, request_bytes(key=LITELLM_KEY))
        finally:
            server.close()
        rows.append({"server": "litellm" + (" 30% 503s" if flaky else ""), **row})
    return rows


async def latency(
    sim: Sim, chain: Path, seconds: float, rate: float, server: str = "aiohttp"
) -> dict[str, Any]:
    sim.defaults({})
    gw = gateway(sim, chain, cpu=os.environ.get("BENCH_GATEWAY_CPU", "0") or None, server=server)
    try:
        await closed_loop(gw.url, 10, 0.5, request_bytes(), Tally())
        direct = await open_loop(
            sim.url, rate, seconds, request_bytes(path="/openai/v1/chat/completions")
        )
        through = await open_loop(gw.url, rate, seconds, request_bytes())
    finally:
        gw.close()
    return {
        "rate": rate,
        "added_p50": through.p(0.5) - direct.p(0.5),
        "direct_p50": direct.p(0.5), "direct_p99": direct.p(0.99),
        "gateway_p50": through.p(0.5), "gateway_p99": through.p(0.99),
        "added_p99": through.p(0.99) - direct.p(0.99), "failed": through.failed,
    }  # fmt: skip


async def sequential(sim: Sim, chain: Path, calls: int = 1000) -> dict[str, float]:
    """One request at a time over one connection: latency with no queueing at all."""
    sim.defaults({})
    servers = {"floor": floor(sim), "gateway": gateway(sim, chain)}
    out: dict[str, float] = {}
    try:
        targets = [("direct", sim.url, request_bytes(path="/openai/v1/chat/completions"))]
        targets += [(name, server.url, request_bytes()) for name, server in servers.items()]
        for name, url, req in targets:
            reader, writer = await asyncio.open_connection("127.0.0.1", int(url.rsplit(":", 1)[1]))
            tally = Tally()
            for _ in range(calls):
                t0 = time.perf_counter()
                await exchange(reader, writer, req)
                tally.latencies.append(time.perf_counter() - t0)
            writer.close()
            out[f"{name}_p50"], out[f"{name}_p99"] = tally.p(0.5), tally.p(0.99)
    finally:
        for server in servers.values():
            server.close()
    out["added_p50_over_floor"] = out["gateway_p50"] - out["floor_p50"]
    out["added_p99_over_direct"] = out["gateway_p99"] - out["direct_p99"]
    return out


async def sigterm(sim: Sim, chain: Path) -> dict[str, Any]:
    sim.defaults({"openai": {"delay": 0.2, "then": {"ok": None}}})
    server = gateway(sim, chain, cpu=None, workers=2)
    tally = Tally()
    load = asyncio.create_task(closed_loop(server.url, 100, 6.0, request_bytes(), tally))
    await asyncio.sleep(2.0)
    server.proc.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(server.proc.wait, 60)
    await load
    forwarded = sim.count("openai")
    return {"exit": code, "answered": tally.ok, "forwarded": forwarded,
            "lost": forwarded - tally.ok, "refused_after_drain": tally.failed}  # fmt: skip


async def sigkill(sim: Sim, chain: Path) -> dict[str, Any]:
    sim.defaults({"openai": {"delay": 0.2, "then": {"ok": None}}})
    server = gateway(sim, chain, cpu=None, workers=4)
    try:
        before = Tally()
        await closed_loop(server.url, 200, 1.0, request_bytes(), before)
        tally = Tally()
        load = asyncio.create_task(closed_loop(server.url, 200, 4.0, request_bytes(), tally))
        await asyncio.sleep(1.0)
        victim = workers_of(server.proc.pid)[0]
        os.kill(victim, signal.SIGKILL)
        await load
        workers = len(workers_of(server.proc.pid))
    finally:
        server.close()
    return {"connections": 200, "failed": tally.failed, "ok": tally.ok,
            "expected_in_flight_on_victim": 200 // 4, "workers_after": workers}  # fmt: skip


async def slowloris(sim: Sim, chain: Path, seconds: float) -> dict[str, Any]:
    sim.defaults({})
    server = gateway(sim, chain)
    port = server.port
    stop = asyncio.Event()

    async def slow() -> None:
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            while not stop.is_set():
                await asyncio.sleep(1.0)
                writer.write(b"X-Slow: 1\r\n")
                await writer.drain()

    try:
        alone = await measure(server, 50, seconds, request_bytes())
        attackers = [asyncio.create_task(slow()) for _ in range(1000)]
        await asyncio.sleep(1.0)
        attacked = await measure(server, 50, seconds, request_bytes())
        stop.set()
        await asyncio.gather(*attackers, return_exceptions=True)
    finally:
        server.close()
    return {"rps_alone": alone["rps"], "rps_with_1000_slow": attacked["rps"],
            "p99_alone": alone["p99"], "p99_with_1000_slow": attacked["p99"],
            "failed": attacked["failed"]}  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {1})
    only = set(args.only.split(",")) if args.only else None
    sim = Sim()
    tmp = Path(tempfile.mkdtemp())
    chain = tmp / "chain.yaml"
    chain.write_text(CHAIN)
    try:
        runs = {
            "servers": lambda: servers(sim, chain, args.seconds, args.rate, args.rounds),
            "sse": lambda: sse_check(sim, chain),
            "interfaces": lambda: interfaces(args.seconds),
            "overhead": lambda: overhead(tmp, args.seconds),
            "throughput": lambda: throughput(sim, chain, args.seconds, flaky=False),
            "failover": lambda: throughput(sim, chain, args.seconds, flaky=True),
            "latency": lambda: latency(sim, chain, args.seconds, args.rate, args.server),
            "sequential": lambda: sequential(sim, chain),
            "sigterm": lambda: sigterm(sim, chain),
            "sigkill": lambda: sigkill(sim, chain),
            "slowloris": lambda: slowloris(sim, chain, args.seconds),
        }
        if args.litellm:
            runs["litellm"] = lambda: litellm(sim, tmp, args.litellm, args.seconds)
        for name, run in runs.items():
            if only is None or name in only:
                print(name, json.dumps(await run(), default=_round), flush=True)
    finally:
        sim.close()


def _round(value: Any) -> Any:
    return round(value, 2) if isinstance(value, float) else str(value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", help="comma-separated scenarios")
    parser.add_argument("--rounds", type=int, default=1, help="servers: interleaved rounds")
    parser.add_argument("--rate", type=float, default=1000.0, help="latency: requests/s")
    parser.add_argument("--server", choices=SERVERS, default="aiohttp", help="latency: the server")
    parser.add_argument("--floor", metavar="UPSTREAM", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--trivial", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--litellm", metavar="BIN", help="also measure this `litellm` proxy (its own venv)"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.floor:
        run_floor(args.floor, args.port)
    elif args.trivial:
        run_trivial(args.port)
    else:
        with contextlib.suppress(ImportError):
            import uvloop

            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        asyncio.run(main(args))
