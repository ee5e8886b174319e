"""ClaudeCode, Codex and GeminiCLI against a stand-in printing each CLI's output format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import errors
from orchestrator.types import Request, Usage
from providers.cli import ClaudeCode, CLIAgent, Codex, GeminiCLI

from .conftest_cli import FAKE_AGENT

REC = "rec.json"


def env_for(tool: str, scenario: str = "ok", record: Path | None = None) -> dict[str, str | None]:
    env: dict[str, str | None] = {"STANDIN_TOOL": tool, "STANDIN_SCENARIO": scenario}
    if record is not None:
        env["STANDIN_RECORD"] = str(record)
    return env


def recording(tool: str, directory: Path, **env: str) -> dict[str, Any]:
    """Keywords that run an agent on the stand-in playing ``tool``'s successful run, which
    records its argv, stdin and environment in ``directory`` (read by :func:`recorded`)."""
    return {"executable": FAKE_AGENT, "env": {**env_for(tool, record=directory / REC), **env}}


def recorded(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / REC).read_text())
    return data


# --- claude ---------------------------------------------------------------------------------


async def test_claude_success_reads_the_json_result(tmp_path: Path) -> None:
    cli = ClaudeCode(
        model="claude-test-1",
        max_turns=3,
        system_prompt="You are terse.",
        **recording("claude", tmp_path),
    )
    resp = await cli.complete(Request("say ping", system="Answer in English."))
    assert resp.text == "pong"
    assert resp.usage == Usage(8, 3)  # input + cache creation + cache read
    assert resp.cost_usd == pytest.approx(0.000075)
    assert resp.model == "claude-test-1"
    assert resp.finish_reason == "end_turn"
    run = recorded(tmp_path)
    assert run["argv"][:3] == ["-p", "--output-format", "json"]
    assert run["argv"][3:] == [
        "--model",
        "claude-test-1",
        "--max-turns",
        "3",
        "--system-prompt",
        "You are terse.",
        "--append-system-prompt",
        "Answer in English.",
    ]
    assert run["stdin"] == "say ping"  # the prompt travels on stdin, never in argv
    assert run["env"]["CLAUDE_CODE_MAX_RETRIES"] == "0"


async def test_claude_max_retries_switch_beats_the_inherited_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "10")
    cli = ClaudeCode(base_url="http://x/anthropic", **recording("claude", tmp_path))
    await cli.complete(Request("hi"))
    assert recorded(tmp_path)["env"]["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert recorded(tmp_path)["env"]["ANTHROPIC_BASE_URL"] == "http://x/anthropic"


async def test_claude_stream_json_output_is_read_from_its_last_result_event(
    tmp_path: Path,
) -> None:
    cli = ClaudeCode(output_format="stream-json", **recording("claude", tmp_path))
    assert (await cli.complete(Request("hi"))).text == "pong"
    assert recorded(tmp_path)["argv"][:4] == ["-p", "--output-format", "stream-json", "--verbose"]


@pytest.mark.parametrize(
    ("scenario", "expected", "status"),
    [
        ("error:401:Invalid API key · Fix external API key", errors.AuthenticationFailed, 401),
        (
            "error:529:API Error: 529 Overloaded. This is a server-side issue",
            errors.Overloaded,
            529,
        ),
        ("error:429:API Error: Rate limit reached", errors.RateLimited, 429),
        ("error:500:API Error: 500 Internal server error", errors.ServerError, 500),
        (
            "error:400:Prompt is too long: 250000 tokens > 200000 maximum",
            errors.ContextWindowExceeded,
            400,
        ),
        ("error:400:Credit balance is too low", errors.QuotaExhausted, 400),
        ("error:404:model: claude-nope not found", errors.ModelNotFound, 404),
        ("error::API Error: 529 overloaded_error", errors.Overloaded, 529),
    ],
)
async def test_claude_errors_are_classified_from_the_json(
    scenario: str, expected: type[errors.ProviderError], status: int
) -> None:
    cli = ClaudeCode(executable=FAKE_AGENT, env=env_for("claude", scenario))
    with pytest.raises(expected) as info:
        await cli.complete(Request("hi"))
    assert info.value.status == status
    assert info.value.provider == "claude-code"


async def test_claude_structured_output_beats_stderr_text() -> None:
    """JSON says 401; a rate-limit-looking stderr (and exit status) must not win."""
    env = env_for("claude", "error:401:Invalid API key")
    env["STANDIN_STDERR"] = "Error: 429 Too Many Requests, rate limit exceeded"
    with pytest.raises(errors.AuthenticationFailed):
        await ClaudeCode(executable=FAKE_AGENT, env=env).complete(Request("hi"))
    # The same stderr without a JSON verdict is classified from the text.
    env["STANDIN_SCENARIO"] = "text:1:"
    with pytest.raises(errors.RateLimited):
        await ClaudeCode(executable=FAKE_AGENT, env=env).complete(Request("hi"))


async def test_claude_max_turns_is_invalid_output() -> None:
    cli = ClaudeCode(max_turns=1, executable=FAKE_AGENT, env=env_for("claude", "max_turns"))
    with pytest.raises(errors.InvalidOutput, match="max_turns"):
        await cli.complete(Request("hi"))


async def test_claude_output_that_is_not_json_is_invalid_output() -> None:
    cli = ClaudeCode(executable=FAKE_AGENT, env=env_for("claude", "garbage"))
    with pytest.raises(errors.InvalidOutput, match="no JSON result"):
        await cli.complete(Request("hi"))


async def test_claude_without_json_falls_back_to_the_exit_status() -> None:
    cli = ClaudeCode(executable=FAKE_AGENT, env=env_for("claude", "text:1:Error: Invalid API key"))
    with pytest.raises(errors.AuthenticationFailed):
        await cli.complete(Request("hi"))


def test_claude_validates_its_options() -> None:
    with pytest.raises(ValueError, match=r"ClaudeCode\.max_turns"):
        ClaudeCode(max_turns=0)
    with pytest.raises(ValueError, match=r"ClaudeCode\.output_format"):
        ClaudeCode(output_format="text")  # type: ignore[arg-type]
    assert isinstance(ClaudeCode(), CLIAgent)


# --- codex ----------------------------------------------------------------------------------


async def test_codex_success_reads_the_last_agent_message(tmp_path: Path) -> None:
    cli = Codex(model="gpt-test", base_url="http://127.0.0.1:9/v1", **recording("codex", tmp_path))
    resp = await cli.complete(Request("say ping"))
    assert resp.text == "pong"
    assert resp.usage == Usage(7, 3)
    run = recorded(tmp_path)
    argv = run["argv"]
    assert argv[:2] == ["exec", "--json"]
    assert argv[-1] == "-"  # prompt from stdin
    assert run["stdin"] == "say ping"
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    assert 'model_provider="failover"' in overrides
    assert "model_providers.failover.request_max_retries=0" in overrides
    assert "model_providers.failover.stream_max_retries=0" in overrides
    assert 'model_providers.failover.base_url="http://127.0.0.1:9/v1"' in overrides
    assert 'model_providers.failover.env_key="OPENAI_API_KEY"' in overrides
    assert 'model_providers.failover.wire_api="responses"' in overrides
    assert argv[argv.index("-m") + 1] == "gpt-test"


def test_codex_rejects_a_bad_key_variable_name() -> None:
    with pytest.raises(ValueError, match=r"Codex\.api_key_env"):
        Codex(api_key_env="sk-not-a-name")


# --- gemini ---------------------------------------------------------------------------------


async def test_gemini_success_and_its_retry_switch(tmp_path: Path) -> None:
    cli = GeminiCLI(
        model="gemini-test",
        base_url="http://127.0.0.1:9",
        skip_trust=True,
        settings_dir=tmp_path / "settings",
        **recording("gemini", tmp_path),
    )
    resp = await cli.complete(Request("say ping"))
    assert resp.text == "pong"
    assert resp.usage == Usage(5, 2)
    assert resp.model == "gemini-test"
    run = recorded(tmp_path)
    assert run["argv"] == [
        "--output-format",
        "json",
        "-m",
        "gemini-test",
        "--skip-trust",
        "-p",
        "",
    ]
    assert run["stdin"] == "say ping"
    assert run["env"]["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    settings_path = Path(run["env"]["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    assert settings_path.parent == tmp_path / "settings"
    settings = json.loads(settings_path.read_text())
    assert settings["general"]["maxAttempts"] == 1
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert oct(settings_path.stat().st_mode & 0o777) == "0o600"


async def test_gemini_merges_an_existing_system_settings_file(tmp_path: Path) -> None:
    admin = tmp_path / "admin.json"
    admin.write_text(json.dumps({"general": {"vimMode": True}, "tools": {"sandbox": False}}))
    settings = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(admin)}
    cli = GeminiCLI(settings_dir=tmp_path / "s", **recording("gemini", tmp_path, **settings))
    await cli.complete(Request("hi"))
    path = recorded(tmp_path)["env"]["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]
    assert path != str(admin)
    assert json.loads(Path(path).read_text()) == {
        "general": {"vimMode": True, "maxAttempts": 1},
        "tools": {"sandbox": False},
    }


@pytest.mark.parametrize(
    ("tool", "scenario", "expected"),
    [
        (
            "codex",
            "error::exceeded retry limit, last status: 429 Too Many Requests",
            errors.RateLimited,
        ),
        (
            "codex",
            "error::Quota exceeded. Check your plan and billing details.",
            errors.QuotaExhausted,
        ),
        (
            "codex",
            "error::Codex ran out of room in the model's context window. Start a new thread.",
            errors.ContextWindowExceeded,
        ),
        (
            "codex",
            "error::unexpected status 401 Unauthorized: Incorrect API key provided",
            errors.AuthenticationFailed,
        ),
        (
            "codex",
            "error::We're currently experiencing high demand, which may cause temporary errors.",
            errors.Overloaded,
        ),
        ("codex", "error::unexpected status 503 Service Unavailable: upstream", errors.ServerError),
        (
            "codex",
            "error::The model gpt-5 does not exist or you do not have access to it.",
            errors.ModelNotFound,
        ),
        # Over HTTP this very Gemini reply is a ServerError (test_http_errors_map,
        # test_http_matrix); this row asserted the CLI path's drifted answer, Overloaded.
        (
            "gemini",
            "error:503:The model is overloaded. Please try again later.",
            errors.ServerError,
        ),
        ("gemini", "error:429:Resource has been exhausted (e.g. check quota).", errors.RateLimited),
        (
            "gemini",
            "error:429:You exceeded your current quota, please check your plan",
            errors.QuotaExhausted,
        ),
        (
            "gemini",
            "error:400:API key not valid. Please pass a valid API key.",
            errors.AuthenticationFailed,
        ),
        (
            "gemini",
            "error:400:The input token count (300000) exceeds the maximum",
            errors.ContextWindowExceeded,
        ),
        ("gemini", "error:500:Internal error encountered.", errors.ServerError),
        ("gemini", "error:41:Invalid auth method selected.", errors.AuthenticationFailed),
        (
            "gemini",
            "error:55:Gemini CLI is not running in a trusted directory.",
            errors.UnusableError,
        ),
        ("gemini", "error:53:Reached max session turns", errors.InvalidOutput),
    ],
)
async def test_codex_and_gemini_errors_are_classified(
    tool: str, scenario: str, expected: type[errors.ProviderError], tmp_path: Path
) -> None:
    """Codex's turn.failed messages and Gemini's JSON on stderr, as each CLI prints them."""
    env = env_for(tool, scenario)
    if tool == "codex":
        cli: CLIAgent = Codex(executable=FAKE_AGENT, env=env)
    else:
        cli = GeminiCLI(settings_dir=tmp_path, executable=FAKE_AGENT, env=env)
    with pytest.raises(expected) as info:
        await cli.complete(Request("hi"))
    assert info.value.provider == cli.name


async def test_gemini_untrusted_folder_error_names_the_fix(tmp_path: Path) -> None:
    cli = GeminiCLI(
        settings_dir=tmp_path,
        executable=FAKE_AGENT,
        env=env_for("gemini", "error:55:not running in a trusted directory"),
    )
    with pytest.raises(errors.UnusableError, match="skip_trust=True"):
        await cli.complete(Request("hi"))
