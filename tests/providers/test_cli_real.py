"""The real claude, codex and gemini CLIs, pointed at loopback servers (npm installs needed).

claude and gemini talk to the SimulatedServer's Anthropic and Gemini routes.
codex only speaks the Responses API (``POST {base}/responses``, SSE), which
the simulator does not serve, so codex talks to a small Responses stub here.
Each test skips, saying why, only when its binary is absent
(``scripts/install-cli-agents.sh`` installs them into ``.cli-agents/``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from orchestrator._request import Request
from orchestrator.errors import (
    AuthenticationFailed,
    Overloaded,
    ProviderTimeout,
    RateLimited,
)
from orchestrator.fallback import FallbackAgent
from providers._anthropic import AnthropicMessages
from providers.cli import ClaudeCode, Codex, GeminiCLI
from providers.simulated import Fault, SimulatedServer

from .conftest_cli import find_cli, secure_dir

pytestmark = pytest.mark.cli


def need(name: str, package: str) -> str:
    path = find_cli(name)
    if path is None:
        pytest.skip(f"{name} CLI not installed: run scripts/install-cli-agents.sh ({package})")
    return path


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedServer]:
    async with SimulatedServer() as server:
        yield server


# --- claude -> SimulatedServer anthropic route ---------------------------------------------


def claude(sim: SimulatedServer, home: Path, **kw: Any) -> ClaudeCode:
    env: dict[str, str | None] = {
        "ANTHROPIC_API_KEY": "sk-ant-test-dummy-key",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOME": str(home),
    }
    kw.setdefault("timeout", 60.0)
    return ClaudeCode(
        base_url=sim.anthropic_url,
        env=env,
        executable=need("claude", "@anthropic-ai/claude-code"),
        cwd=home,
        **kw,
    )


async def test_claude_answers_from_the_simulator(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.script("anthropic", [Fault.ok("pong from sim")])
    resp = await claude(sim, tmp_path).complete(Request("say ping"))
    assert resp.text == "pong from sim"
    assert resp.usage is not None and resp.usage.output_tokens > 0
    assert sim.count("anthropic") == 1


async def test_claude_529_is_overloaded_at_once_without_cli_retries(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("anthropic", Fault.overloaded())
    start = time.monotonic()
    with pytest.raises(Overloaded) as info:
        await claude(sim, tmp_path).complete(Request("say ping"))
    assert info.value.status == 529
    assert sim.count("anthropic") == 1, "the CLI retried on its own"
    assert time.monotonic() - start < 15


async def test_claude_401_is_authentication_failed_at_once(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("anthropic", Fault.auth())
    with pytest.raises(AuthenticationFailed):
        await claude(sim, tmp_path).complete(Request("say ping"))
    assert sim.count("anthropic") == 1


async def test_claude_529_makes_the_chain_fall_over(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.script("anthropic", [Fault.overloaded(), Fault.ok("answered by the backup")])
    backup = AnthropicMessages(
        "claude-backup",
        base_url=sim.anthropic_url,
        api_key="sk-ant-test-dummy-key",
        name="anthropic-http",
        allow_insecure_http=True,
    )
    chain = FallbackAgent([claude(sim, tmp_path), backup], max_retries=0)
    result = await chain.run("say ping")
    assert result.text == "answered by the backup"
    assert result.handled_by == "anthropic-http"
    assert [a.agent for a in result.attempts] == ["claude-code", "anthropic-http"]
    assert isinstance(result.attempts[0].error, Overloaded)


async def test_claude_hang_is_killed_by_idle_timeout(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.set_default("anthropic", Fault.hang())
    start = time.monotonic()
    with pytest.raises(ProviderTimeout, match="idle_timeout"):
        await claude(sim, tmp_path, idle_timeout=2.0).complete(Request("say ping"))
    assert time.monotonic() - start < 10


# --- codex -> Responses API stub ------------------------------------------------------------


class ResponsesStub:
    """``POST /v1/responses`` with SSE, scripted per request: "ok", an HTTP status, or "hang"."""

    def __init__(self) -> None:
        self.script: list[str | int] = []
        self.count = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.count += 1
        step = self.script.pop(0) if self.script else "ok"
        if step == "hang":
            await asyncio.Event().wait()
        if isinstance(step, int):
            err = {"message": f"stub status {step}", "type": "server_error", "code": None}
            headers = {"retry-after": "1"} if step == 429 else {}
            return web.json_response({"error": err}, status=step, headers=headers)
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        item = {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "pong from stub", "annotations": []}],
        }
        base: dict[str, Any] = {
            "id": "resp_1",
            "object": "response",
            "model": body.get("model"),
            "output": [],
        }
        usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**base, "status": "in_progress"}},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {
                "type": "response.completed",
                "response": {**base, "status": "completed", "output": [item], "usage": usage},
            },
        ]
        for n, ev in enumerate(events):
            data = json.dumps({**ev, "sequence_number": n})
            await resp.write(f"event: {ev['type']}\ndata: {data}\n\n".encode())
        return resp

    async def __aenter__(self) -> ResponsesStub:
        app = web.Application()
        app.router.add_post("/v1/responses", self.handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def codex(stub: ResponsesStub, home: Path, **kw: Any) -> Codex:
    env: dict[str, str | None] = {"OPENAI_API_KEY": "sk-test-dummy-key", "HOME": str(home)}
    kw.setdefault("timeout", 60.0)
    return Codex(
        model="gpt-test",
        base_url=stub.url,
        env=env,
        executable=need("codex", "@openai/codex"),
        cwd=home,
        **kw,
    )


async def test_codex_answers_from_a_responses_endpoint(tmp_path: Path) -> None:
    async with ResponsesStub() as stub:
        resp = await codex(stub, tmp_path).complete(Request("say ping"))
        assert resp.text == "pong from stub"
        assert stub.count == 1


async def test_codex_429_is_rate_limited_without_cli_retries(tmp_path: Path) -> None:
    async with ResponsesStub() as stub:
        stub.script = [429, 429, 429]
        with pytest.raises(RateLimited):
            await codex(stub, tmp_path).complete(Request("say ping"))
        assert stub.count == 1, "codex retried on its own"


async def test_codex_hang_is_killed_by_idle_timeout(tmp_path: Path) -> None:
    async with ResponsesStub() as stub:
        stub.script = ["hang"]
        start = time.monotonic()
        with pytest.raises(ProviderTimeout, match="idle_timeout"):
            await codex(stub, tmp_path, idle_timeout=2.0).complete(Request("say ping"))
        assert time.monotonic() - start < 10


# --- gemini -> SimulatedServer gemini route ------------------------------------------------


def gemini(sim: SimulatedServer, home: Path, **kw: Any) -> GeminiCLI:
    env: dict[str, str | None] = {"GEMINI_API_KEY": "gemini-test-dummy-key", "HOME": str(home)}
    kw.setdefault("timeout", 60.0)
    return GeminiCLI(
        model="gemini-test",
        base_url=sim.gemini_url,
        skip_trust=True,
        settings_dir=secure_dir("gemini"),
        env=env,
        executable=need("gemini", "@google/gemini-cli"),
        cwd=home,
        **kw,
    )


async def test_gemini_answers_from_the_simulator(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.script("gemini", [Fault.ok("pong from sim")])
    resp = await gemini(sim, tmp_path).complete(Request("say ping"))
    assert resp.text == "pong from sim"
    assert sim.count("gemini") == 1


async def test_gemini_503_is_overloaded_without_cli_retries(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("gemini", Fault.overloaded())
    with pytest.raises(Overloaded):
        await gemini(sim, tmp_path).complete(Request("say ping"))
    assert sim.count("gemini") == 1, "gemini retried on its own"


async def test_gemini_hang_is_killed_by_idle_timeout(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.set_default("gemini", Fault.hang())
    start = time.monotonic()
    with pytest.raises(ProviderTimeout, match="idle_timeout"):
        await gemini(sim, tmp_path, idle_timeout=3.0).complete(Request("say ping"))
    assert time.monotonic() - start < 15
