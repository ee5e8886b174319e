"""``failover serve --server aiohttp|granian``: the same gateway on either HTTP server."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from orchestrator import FallbackAgent, Request, Response
from providers import Fault, SimulatedServer
from providers.serve import command
from tests.conftest import write_chain
from tests.providers.serve.conftest import fallback, gateway
from tests.providers.serve.processes import CHAIN, serving

REQUEST = {"model": "review", "messages": [{"role": "user", "content": "hi"}]}


async def test_failover_serve_runs_on_the_server_it_is_asked_for(
    sim: SimulatedServer, tmp_path: Path, server: str
) -> None:
    sim.set_default("anthropic", Fault.status(529))
    async with serving(sim, tmp_path) as (_, url), aiohttp.ClientSession() as http:
        async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
            assert r.status == 200
            assert r.headers["x-failover-handled-by"] == "gpt"
            named = r.headers.get("Server", "")
        async with http.post(url + "/v1/chat/completions", json={**REQUEST, "stream": True}) as r:
            raw = (await r.read()).decode()
    assert ("granian" in named) == (server == "granian"), named
    assert raw.rstrip().endswith("data: [DONE]")


async def test_many_streams_in_flight_each_whole(sim: SimulatedServer) -> None:
    # 64 streams at once through one gateway, the first provider failing each: every client
    # gets its own stream whole, from the second provider.
    sim.set_default("anthropic", Fault.status(529))
    sim.set_default("openai", Fault.delay(0.1, Fault.ok("one two three")))
    body = {"model": "review", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    async with gateway({"review": fallback(sim)}) as url, aiohttp.ClientSession() as http:

        async def one() -> str:
            async with http.post(url + "/v1/chat/completions", json=body) as r:
                assert r.status == 200
                return (await r.read()).decode()

        streams = await asyncio.gather(*(one() for _ in range(64)))
    for raw in streams:
        assert raw.rstrip().endswith("data: [DONE]")
        assert _text(raw) == "one two three"


def _text(raw: str) -> str:
    """The text of a chat completion stream."""
    chunks = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


async def test_a_client_that_leaves_a_stream_cancels_its_run_upstream() -> None:
    cancelled = asyncio.Event()

    class Trickle:
        name = "trickle"

        async def complete(self, request: Request) -> Response:
            raise AssertionError("streamed only")

        async def stream(self, request: Request):  # type: ignore[no-untyped-def]
            try:
                for _ in range(1000):
                    yield "word "
                    await asyncio.sleep(0.02)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            finally:
                cancelled.set()

    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    async with gateway({"m": FallbackAgent([Trickle()])}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + "/v1/chat/completions", json=body) as r:
            assert r.status == 200
            await r.content.readany()
        async with asyncio.timeout(5):
            await cancelled.wait()


def test_granian_is_the_default_server_when_installed(server: str) -> None:
    # Measured faster (docs/gateway.md); aiohttp stays for an install without the serve extra.
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert command._settings(parser.parse_args(["chain.yaml"])).server == "granian"
    chosen = command._settings(parser.parse_args(["chain.yaml", "--server", server])).server
    assert chosen == server


def test_asking_for_granian_without_it_is_refused_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(command, "default_server", lambda: "aiohttp")
    monkeypatch.setenv("SIM", "http://127.0.0.1:9")
    monkeypatch.setenv("K", "sk-test-0123456789")
    chain = write_chain(tmp_path, CHAIN)
    assert command.main([str(chain), "--port", "0", "--server", "granian"]) == 2
    assert "failover-orchestrator[serve]" in capsys.readouterr().err
