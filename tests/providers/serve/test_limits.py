"""Load shedding, slow clients, probes, and many calls at once."""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import pytest

from orchestrator import FallbackAgent, Request, Response
from providers import Fault, SimulatedServer
from tests.providers.serve.conftest import Recorder, fallback, gateway

CHAT = "/v1/chat/completions"
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class Gate:
    """A provider that holds every call until ``release`` is set."""

    name = "gate"

    def __init__(self) -> None:
        self.entered = 0
        self.release = asyncio.Event()

    async def complete(self, request: Request) -> Response:
        self.entered += 1
        await self.release.wait()
        return Response("done")


async def test_beyond_max_in_flight_is_a_503_with_retry_after() -> None:
    gate = Gate()
    agents = {"m": FallbackAgent([gate])}
    async with gateway(agents, max_in_flight=2) as url, aiohttp.ClientSession() as http:
        held = [asyncio.create_task(http.post(url + CHAT, json=REQUEST)) for _ in range(2)]
        while gate.entered < 2:
            await asyncio.sleep(0.01)
        async with http.post(url + CHAT, json=REQUEST) as r:
            assert r.status == 503
            assert r.headers["Retry-After"] == "1"
            assert "in-flight limit" in (await r.json())["error"]["message"]
        async with http.get(url + "/healthz") as r:
            assert r.status == 200  # probes are not shed
        gate.release.set()
        for task in held:
            response = await task
            assert response.status == 200
            response.release()
        async with http.post(url + CHAT, json=REQUEST) as r:
            assert r.status == 200  # the places were given back


async def test_a_slow_client_is_disconnected_and_others_are_served() -> None:
    agents = {"m": FallbackAgent([Recorder()])}
    async with gateway(agents, idle_timeout=0.3) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = []
        for _ in range(50):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            slow.append((reader, writer))
        async with aiohttp.ClientSession() as http, http.post(url + CHAT, json=REQUEST) as r:
            assert r.status == 200
        for reader, writer in slow:
            writer.write(b"X-Slow: 1\r\n")  # one header line at a time, never finishing
            async with asyncio.timeout(5):
                # The gateway hung up (a reset when the late line arrived after the close).
                with contextlib.suppress(ConnectionResetError):
                    assert await reader.read() == b""
            writer.close()


async def test_a_slow_body_is_a_408() -> None:
    agents = {"m": FallbackAgent([Recorder()])}
    async with gateway(agents, body_timeout=0.2) as url:
        port = int(url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        )
        async with asyncio.timeout(5):
            head = await reader.readline()
        assert head.startswith(b"HTTP/1.1 408")
        writer.close()


async def test_probes() -> None:
    async with (
        gateway({"m": FallbackAgent([Recorder()], health=True)}) as url,
        aiohttp.ClientSession() as http,
    ):
        async with http.get(url + "/healthz") as r:
            assert (r.status, (await r.json())["status"]) == (200, "ok")
        async with http.get(url + "/readyz") as r:
            ready = await r.json()
            assert r.status == 200
        async with http.get(url + "/metrics") as r:
            text = await r.text()
            assert r.status in (200, 501)
    assert ready == {"status": "ready", "models": 1, "stores": ["local"]}
    if r.status == 501:
        assert text.startswith("metrics unavailable: ")


async def test_a_hundred_calls_in_flight_through_the_fallback(sim: SimulatedServer) -> None:
    sim.set_default("anthropic", Fault.status(529))
    async with gateway({"review": fallback(sim)}) as url, aiohttp.ClientSession() as http:

        async def one(i: int) -> tuple[int, str]:
            stream = i % 2 == 0
            payload = {**REQUEST, "model": "review", "stream": stream}
            async with http.post(url + CHAT, json=payload) as r:
                await r.read()
                return r.status, r.headers.get("x-failover-handled-by", "missing")

        results = await asyncio.gather(*(one(i) for i in range(100)))
    assert [s for s, _ in results] == [200] * 100
    # Streams name the provider too (the one whose text they carry), each its own.
    assert {h for _, h in results} == {"openai:gpt-sim"}
    assert sim.count("openai") == 100


async def test_metrics_serve_the_telemetry_exposition(monkeypatch: pytest.MonkeyPatch) -> None:
    from providers.serve import probes

    exposition: list[bytes | None] = [b"# TYPE failover_runs counter\nfailover_runs 3\n"]
    monkeypatch.setattr(probes, "prometheus_exposition", lambda: exposition[0])
    async with gateway({"m": FallbackAgent([Recorder()])}) as url, aiohttp.ClientSession() as http:
        async with http.get(url + "/metrics") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert "failover_runs 3" in await r.text()
        exposition[0] = None  # the exporter is not installed
        async with http.get(url + "/metrics") as r:
            assert r.status == 501
            assert "opentelemetry-exporter-prometheus" in await r.text()


async def test_a_client_that_leaves_cancels_its_run_upstream() -> None:
    cancelled = asyncio.Event()

    class Hang:
        name = "hang"

        async def complete(self, request: Request) -> Response:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("unreachable")

    async with gateway({"m": FallbackAgent([Hang()])}) as url:
        port = int(url.rsplit(":", 1)[1])
        payload = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()
        async with asyncio.timeout(5):
            await cancelled.wait()
