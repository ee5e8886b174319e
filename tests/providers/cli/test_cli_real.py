"""The real claude, codex and gemini CLIs, pointed at loopback servers (npm installs needed).

claude, codex and gemini talk to the SimulatedServer's Anthropic, Responses
(``POST /openai/v1/responses``, SSE: codex speaks only the Responses API) and
Gemini routes.
Each test skips, saying why, only when its binary is absent
(``scripts/install-cli-agents.sh`` installs them into ``.cli-agents/``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.engine.agent import FallbackAgent
from orchestrator.errors import (
    AuthenticationFailed,
    GuardrailTriggered,
    Overloaded,
    ProviderTimeout,
    RateLimited,
    ServerError,
    StreamInterrupted,
)
from orchestrator.types import Request
from providers.anthropic import AnthropicMessages
from providers.cli import ClaudeCode, Codex, GeminiCLI
from providers.simulator import Fault, SimulatedServer

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


async def test_claude_default_reply_names_the_prompt_not_the_system_reminder(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    resp = await claude(sim, tmp_path).complete(Request("say ping"))
    assert resp.text == "sim-anthropic: say ping"
    messages = sim.requests("anthropic")[-1]["body"]["messages"]
    last = [m for m in messages if m["role"] == "user"][-1]["content"]
    # What makes the test meaningful: claude puts a <system-reminder> block before the prompt.
    assert isinstance(last, list) and len(last) > 1
    assert last[0]["text"].startswith("<system-reminder>")


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


# --- codex -> SimulatedServer responses route (POST /openai/v1/responses) ----------------


def codex(sim: SimulatedServer, home: Path, **kw: Any) -> Codex:
    env: dict[str, str | None] = {"OPENAI_API_KEY": "sk-test-dummy-key", "HOME": str(home)}
    kw.setdefault("timeout", 60.0)
    return Codex(
        model="gpt-test",
        base_url=sim.openai_url,
        env=env,
        executable=need("codex", "@openai/codex"),
        cwd=home,
        **kw,
    )


async def test_codex_answers_from_the_simulator(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.script("responses", [Fault.ok("pong from sim", usage=(7, 3))])
    resp = await codex(sim, tmp_path).complete(Request("say ping"))
    assert resp.text == "pong from sim"
    assert resp.usage is not None and resp.usage.output_tokens == 3
    assert sim.count("responses") == 1
    assert sim.count("openai") == 0
    sent = sim.requests("responses")[0]["body"]
    assert sent["model"] == "gpt-test"
    assert sent["stream"] is True


async def test_codex_default_reply_names_the_prompt_not_its_context(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    # codex sends <environment_context> in an earlier user message; the prompt is the last one.
    resp = await codex(sim, tmp_path).complete(Request("say ping"))
    assert resp.text == "sim-responses: say ping"


async def test_codex_429_is_rate_limited_without_cli_retries(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("responses", Fault.rate_limited(1))
    with pytest.raises(RateLimited) as info:
        await codex(sim, tmp_path).complete(Request("say ping"))
    assert info.value.status == 429
    assert sim.count("responses") == 1, "codex retried on its own"


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (Fault.content_filter, GuardrailTriggered),
        (lambda: Fault.cut_stream(after=1), StreamInterrupted),
    ],
    ids=["content_filter", "cut_stream"],
)
async def test_codex_refusal_and_cut_stream_keep_their_meaning(
    sim: SimulatedServer, tmp_path: Path, fault: Any, expected: type[Exception]
) -> None:
    sim.set_default("responses", fault())
    with pytest.raises(expected):
        await codex(sim, tmp_path).complete(Request("say ping"))
    assert sim.count("responses") == 1


async def test_codex_hang_is_killed_by_idle_timeout(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.set_default("responses", Fault.hang())
    start = time.monotonic()
    with pytest.raises(ProviderTimeout, match="idle_timeout"):
        await codex(sim, tmp_path, idle_timeout=2.0).complete(Request("say ping"))
    assert time.monotonic() - start < 10
    assert sim.count("responses") == 1


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


async def test_gemini_503_is_a_server_error_without_cli_retries(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    # One table for HTTP and CLI (issue 9): a 5xx is decided by its status, so Gemini's
    # 503 "overloaded" is a ServerError by either path (only 529 / overloaded_error are
    # Overloaded); both are transient, only the reason label differs.
    sim.set_default("gemini", Fault.overloaded())
    with pytest.raises(ServerError):
        await gemini(sim, tmp_path).complete(Request("say ping"))
    assert sim.count("gemini") == 1, "gemini retried on its own"


async def test_gemini_hang_is_killed_by_idle_timeout(sim: SimulatedServer, tmp_path: Path) -> None:
    sim.set_default("gemini", Fault.hang())
    start = time.monotonic()
    with pytest.raises(ProviderTimeout, match="idle_timeout"):
        await gemini(sim, tmp_path, idle_timeout=3.0).complete(Request("say ping"))
    assert time.monotonic() - start < 15
