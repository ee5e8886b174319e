"""The coding-agent CLIs price a reply from the catalogue when they know model and vendor."""

from __future__ import annotations

import pytest

from orchestrator.types import Request, Usage
from providers.cli import ClaudeCode, Codex, GeminiCLI

from .conftest_cli import FAKE_AGENT


def standin(tool: str) -> dict[str, str | None]:
    return {"STANDIN_TOOL": tool, "STANDIN_SCENARIO": "ok"}


async def test_codex_with_a_known_model_on_openai_is_priced() -> None:
    cli = Codex(model="gpt-4o-mini", executable=FAKE_AGENT, env=standin("codex"))
    resp = await cli.complete(Request("say ping"))
    assert resp.usage == Usage(7, 3)
    assert resp.cost_usd == pytest.approx((7 * 0.15 + 3 * 0.6) / 1_000_000)


async def test_gemini_cli_with_a_known_model_is_priced(tmp_path: object) -> None:
    cli = GeminiCLI(
        model="gemini-2.5-flash",
        settings_dir=str(tmp_path),
        executable=FAKE_AGENT,
        env=standin("gemini"),
    )
    resp = await cli.complete(Request("say ping"))
    assert resp.usage == Usage(5, 2)
    assert resp.cost_usd == pytest.approx((5 * 0.3 + 2 * 2.5) / 1_000_000)


@pytest.mark.parametrize(
    "cli",
    [
        Codex(model="gpt-test", executable=FAKE_AGENT, env=standin("codex")),  # unknown model
        Codex(executable=FAKE_AGENT, env=standin("codex")),  # the CLI's default: unknown
        Codex(  # another endpoint's "gpt-4o-mini" is not OpenAI's price
            model="gpt-4o-mini",
            base_url="http://127.0.0.1:9/v1",
            executable=FAKE_AGENT,
            env=standin("codex"),
        ),
    ],
)
async def test_no_cost_when_model_or_vendor_is_unknown(cli: Codex) -> None:
    resp = await cli.complete(Request("say ping"))
    assert resp.usage is not None and resp.cost_usd is None


async def test_claudes_own_cost_is_kept() -> None:
    cli = ClaudeCode(model="claude-sonnet-4-5", executable=FAKE_AGENT, env=standin("claude"))
    assert cli.rates is not None
    resp = await cli.complete(Request("say ping"))
    assert resp.cost_usd == pytest.approx(0.000075)  # what the CLI reported
