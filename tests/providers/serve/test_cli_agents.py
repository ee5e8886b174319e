"""The real ``claude`` CLI through the gateway: Anthropic's route answers 529, OpenAI's answers.

Skips, saying how to install it, when the CLI is absent (``scripts/install-cli-agents.sh``).
Claude Code sends what a real session sends: ``HEAD /``, ``?beta=true``, ~25 tools,
``thinking``, ``context_management``, system blocks with ``cache_control`` and a
mid-conversation ``system`` message; its reply must parse.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from providers import Fault, SimulatedServer
from providers.serve import GatewayKeys
from tests.providers.cli.conftest_cli import find_cli
from tests.providers.serve.conftest import fallback, gateway

pytestmark = pytest.mark.cli

KEY = "gw-claude-key"


def need(name: str, package: str) -> str:
    path = find_cli(name)
    if path is None:
        pytest.skip(f"{name} CLI not installed: run scripts/install-cli-agents.sh ({package})")
    return path


async def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_claude_code_completes_through_the_fallback(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    claude = need("claude", "@anthropic-ai/claude-code")
    sim.set_default("anthropic", Fault.status(529))
    keys = GatewayKeys.load({"FAILOVER_GATEWAY_KEYS": KEY})
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ANTHROPIC_API_KEY": KEY,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    async with gateway({"review": fallback(sim)}, keys=keys) as url:
        env["ANTHROPIC_BASE_URL"] = url
        argv = [claude, "-p", "say ping", "--output-format", "json", "--model", "review"]
        code, out, err = await run(argv, env, tmp_path)
    assert code == 0, err[-2000:]
    reply = json.loads(out)
    assert reply["is_error"] is False, reply
    assert reply["result"].startswith("sim-openai: ")
    assert sim.count("anthropic") >= 1 and sim.count("openai") >= 1
    sent = sim.requests("anthropic")[-1]
    assert KEY not in json.dumps(sent["headers"])  # the client's key stayed at the gateway


async def test_codex_completes_through_the_fallback(sim: SimulatedServer, tmp_path: Path) -> None:
    codex = need("codex", "@openai/codex")
    sim.set_default("anthropic", Fault.status(529))
    keys = GatewayKeys.load({"FAILOVER_GATEWAY_KEYS": KEY})
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FAILOVER_KEY": KEY}
    async with gateway({"review": fallback(sim)}, keys=keys) as url:
        # Codex speaks only the Responses API now (wire_api "chat" was removed).
        provider = "model_providers.failover"
        argv = [
            codex, "exec", "--skip-git-repo-check", "-c", "model=review",
            "-c", "model_provider=failover",
            "-c", f'{provider}.name="failover"',
            "-c", f'{provider}.base_url="{url}/v1"',
            "-c", f'{provider}.wire_api="responses"',
            "-c", f'{provider}.env_key="FAILOVER_KEY"',
            "-c", f"{provider}.request_max_retries=0",
            "-c", f"{provider}.stream_max_retries=0",
            "say ping",
        ]  # fmt: skip
        code, out, err = await run(argv, env, tmp_path)
    assert code == 0, err[-2000:]
    assert "sim-openai: say ping" in out
    assert sim.count("openai") >= 1
