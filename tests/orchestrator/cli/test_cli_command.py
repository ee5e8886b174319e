"""The ``failover`` command through ``main([...])``: output, JSON shape and exit codes."""

from __future__ import annotations

import io
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import main
from providers.simulator import Fault, SimulatedServer
from tests.conftest import hooks_chain, hooks_module, write_chain

HOOKS = """
import asyncio

def answer(request):
    return "answer: " + request.prompt

def down(request):
    raise ConnectionError("refused")

def unusable(request):
    from orchestrator.errors import AuthenticationFailed
    raise AuthenticationFailed("invalid key", status=401)

def refuse(request):
    from orchestrator.errors import GuardrailTriggered
    raise GuardrailTriggered("refused by policy")
"""

# The chain file's providers, one per function of HOOKS (shared by test_cli_verbose).
PROVIDERS = """
providers:
  down: {type: function, path: "HOOKS:down"}
  unusable: {type: function, path: "HOOKS:unusable"}
  fn: {type: function, path: "HOOKS:answer"}
  refuse: {type: function, path: "HOOKS:refuse"}
"""


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[Path]:
    """A chain file with function providers: one agent that works, one that cannot."""
    path, mod = hooks_chain(
        tmp_path,
        "clihooks",
        HOOKS,
        PROVIDERS
        + textwrap.dedent("""
            agents:
              review:
                providers: [down, unusable, fn]
                max_retries: 1
                retry_delay: 0.001
              broken:
                providers: [down, unusable]
                max_retries: 1
                retry_strategy: none
              guarded:
                providers: [refuse, fn]
            workflows:
              release:
                phases:
                  - name: Review
                    steps: [{name: review, agent: review, prompt: "Review {input}"}]
                  - name: Summary
                    steps: [{name: summary, agent: fn, prompt: "Sum {review.text}"}]
            """),
    )
    yield path
    sys.modules.pop(mod, None)


def test_run_prints_the_answer(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(chain), "--agent", "review", "hello"]) == 0
    out = capsys.readouterr()
    assert out.out == "answer: hello\n"
    assert out.err == ""


def test_run_json_has_every_attempt(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(chain), "--agent", "review", "--json", "hello"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True
    assert data["text"] == "answer: hello"
    assert data["handled_by"] == "fn"
    assert [(a["agent"], a["attempt_number"], a["reason"]) for a in data["attempts"]] == [
        ("down", 1, "error"),
        ("down", 2, "error"),
        ("unusable", 1, "unusable"),
        ("fn", 1, None),
    ]
    first = data["attempts"][0]
    assert set(first) == {
        "agent",
        "attempt_number",
        "started_at",
        "duration",
        "ok",
        "reason",
        "note",
        "error",
        "usage",
        "cost_usd",
    }
    assert first["error"] == {"type": "ConnectionError", "message": "refused", "status": None}
    assert data["attempts"][2]["error"]["status"] == 401
    assert data["attempts"][3]["error"] is None and data["attempts"][3]["ok"] is True
    assert isinstance(first["started_at"], float) and first["duration"] >= 0


def test_every_provider_failed_exits_1_with_the_summary(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "--agent", "broken", "hello"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        "failover: broken: All agents failed after 3 attempts "
        "(down: ConnectionError (x2); unusable: AuthenticationFailed: HTTP 401: invalid key)\n"
    )


def test_failure_json_lists_the_attempts(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(chain), "--agent", "broken", "--json", "x"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert data["error"]["type"] == "FallbackError"
    assert [a["agent"] for a in data["attempts"]] == ["down", "down", "unusable"]


def test_terminal_error_exits_1(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(chain), "--agent", "guarded", "x"]) == 1
    assert "stopped by GuardrailTriggered: refused by policy" in capsys.readouterr().err


def test_prompt_from_stdin(
    chain: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin\n"))
    assert main(["run", str(chain), "--agent", "review", "-"]) == 0
    assert capsys.readouterr().out == "answer: from stdin\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("no dash\n"))
    assert main(["run", str(chain), "--agent", "review"]) == 0
    assert capsys.readouterr().out == "answer: no dash\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("  \n"))
    assert main(["run", str(chain), "--agent", "review"]) == 2
    assert "empty prompt" in capsys.readouterr().err


def test_bad_file_exits_2_with_the_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text("agents:\n  a:\n    providers: [nope]\n    retry_strategy: expo\n")
    assert main(["run", str(path), "hi"]) == 2
    assert capsys.readouterr().err == (
        f"failover: error: {path}:4: agents.a.retry_strategy: "
        "'expo' is not one of exponential, linear, none\n"
    )
    assert main(["check", str(tmp_path / "missing.toml")]) == 2
    assert "missing.toml: no such file" in capsys.readouterr().err


def test_bad_arguments_exit_2(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(chain), "hi"]) == 2  # three agents: which one?
    assert "declares agents review, broken, guarded and workflows release; choose one" in (
        capsys.readouterr().err
    )
    assert main(["run", str(chain), "--agent", "nope", "hi"]) == 2
    assert "no agent 'nope'; agents: review, broken, guarded" in capsys.readouterr().err
    assert main(["run", str(chain), "--workflow", "nope", "hi"]) == 2
    assert "no workflow 'nope'; workflows: release" in capsys.readouterr().err
    assert main(["run", str(chain), "--agent", "a", "--workflow", "b", "hi"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2
    assert main(["run", str(chain), "--agent", "review", "--timeout", "0", "x"]) == 2


def test_single_agent_needs_no_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = hooks_module(tmp_path, "one", "def echo(request):\n    return request.prompt[::-1]\n")
    path = write_chain(
        tmp_path,
        f'[providers.fn]\ntype = "function"\npath = "{mod}:echo"\n[agents.only]\nproviders = ["fn"]\n',
        "chain.toml",
    )
    try:
        assert main(["run", str(path), "abc"]) == 0
        assert capsys.readouterr().out == "cba\n"
    finally:
        sys.modules.pop(mod, None)


def test_run_workflow(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(chain), "--workflow", "release", "the patch"]) == 0
    assert capsys.readouterr().out == (
        "== review (answered by fn) ==\nanswer: Review the patch\n"
        "== summary (answered by fn) ==\nanswer: Sum answer: Review the patch\n"
    )
    assert main(["run", str(chain), "--workflow", "release", "--json", "--input", "input=x"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["workflow"] == "release"
    assert data["steps"]["summary"]["text"] == "answer: Sum answer: Review x"
    assert data["steps"]["review"]["attempts"][-1]["agent"] == "fn"


def test_check_summarises_the_file(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(chain)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ok: {chain}"
    assert "  agent review: down -> unusable -> fn" in out
    assert "  workflow release: 2 phase(s), 2 step(s); inputs: input" in out


def test_check_ping_against_the_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(
        textwrap.dedent(
            """
            providers:
              codex: {type: openai, model: gpt-4o-mini, base_url: "${SIM}/openai/v1", api_key: "${K}"}
              claude: {type: anthropic, model: claude-x, base_url: "${SIM}/anthropic", api_key: "${K}"}
              gemini: {type: gemini, model: gemini-x, base_url: "${SIM}/gemini", api_key: "${K}"}
            agents:
              review: {providers: [codex, claude, gemini]}
            """
        )
    )
    with SimulatedServer.in_thread() as sim:
        monkeypatch.setenv("SIM", sim.url)
        monkeypatch.setenv("K", "dummy-key")
        assert main(["check", str(path), "--ping"]) == 0
        out = capsys.readouterr().out
        assert (sim.count("openai"), sim.count("anthropic"), sim.count("gemini")) == (1, 1, 1)
        table = out.split("\n\n", 1)[1].splitlines()
        assert table[0].split() == ["provider", "type", "result", "latency", "detail"]
        assert [row.split()[:3] for row in table[1:]] == [
            ["codex", "openai", "ok"],
            ["claude", "anthropic", "ok"],
            ["gemini", "gemini", "ok"],
        ]

        sim.reset()
        sim.set_default("anthropic", Fault.auth())
        sim.set_default("gemini", Fault.hang())
        assert main(["check", str(path), "--ping", "--timeout", "0.5"]) == 1
        out = capsys.readouterr().out
        rows = {row.split()[0]: row for row in out.split("\n\n")[1].splitlines()[1:]}
        assert rows["codex"].split()[2] == "ok"
        assert rows["claude"].split()[2] == "unusable"
        assert "AuthenticationFailed" in rows["claude"]
        assert rows["gemini"].split()[2] == "timeout"
        assert sim.count("anthropic") == 1  # alone: no retry, no fallback
        assert "2 of 3 provider(s) failed: claude, gemini" in out
        assert "dummy-key" not in out


def test_simulate_delegates_to_the_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--port", "0", "--script", str(tmp_path / "none.json")]) == 2
    assert "--script" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("failover 0.")


def test_demo_in_process_plain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--plain"]) == 0
    out = capsys.readouterr().out
    assert "answered by gemini after 6 attempt(s)" in out
    assert "attempt codex#3: ServerError (error)" in out


async def test_demo_with_rich_renders_the_attempts_table() -> None:
    from rich.console import Console

    from providers.demo import Printer, _main

    printer = Printer(plain=False)
    printer.console = Console(record=True, width=200, file=io.StringIO(), force_terminal=True)
    assert await _main(printer) == 0
    text = printer.console.export_text()
    assert "provider" in text and "outcome" in text
    assert "answered by openai-eu-west" in text


def test_structlog_events_never_reach_stdout(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orchestrator import events

    with events.enabled(True):
        assert main(["run", str(chain), "--agent", "review", "--json", "hi"]) == 0
        assert events.is_enabled()  # the caller's setting is restored
    assert json.loads(capsys.readouterr().out)["handled_by"] == "fn"


def test_entry_point_exits_130_when_ctrl_c_turned_into_another_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A SIGINT inside argparse's intermixed parsing surfaces as AttributeError (its
    # finally restores attributes it had not saved yet), with the KeyboardInterrupt
    # as its context: still an interruption, not a crash with a traceback.
    import orchestrator.__main__
    import orchestrator.cli
    from orchestrator.__main__ import main as entry

    # In the console script an interrupted run ends with os._exit(130); in-process it returns.
    monkeypatch.setattr(orchestrator.__main__, "_leave_now", lambda: None)

    def interrupted_in_a_finally(argv: list[str] | None = None) -> int:
        try:
            raise KeyboardInterrupt
        finally:
            raise AttributeError("'_StoreAction' object has no attribute 'save_nargs'")

    monkeypatch.setattr(orchestrator.cli, "main", interrupted_in_a_finally)
    assert entry() == 130
    assert capsys.readouterr().err == "failover: interrupted\n"

    def plain_bug(argv: list[str] | None = None) -> int:
        raise AttributeError("a real bug")

    monkeypatch.setattr(orchestrator.cli, "main", plain_bug)
    with pytest.raises(AttributeError, match="a real bug"):
        entry()
