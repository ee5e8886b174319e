"""The "Done when" of issue 21: ``failover run --workflow`` SIGKILLed while phase 2 is in
flight, then run again: no completed step is sent again and the result equals an
uninterrupted run's; two processes racing to resume one run id: exactly one wins, the
other is refused at once (exit 1, "being run by another process"), having sent nothing.
Each on the SQLite file, on Postgres and on DBOS over Postgres (a throwaway cluster; skipped
without Postgres or dbos): there the second process is a second worker recovering the first
one's run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.cli import main
from providers.simulator import Fault, SimulatedServer
from tests.conftest import write_chain

FAILOVER = Path(sys.executable).parent / "failover"
pytestmark = pytest.mark.skipif(
    not FAILOVER.exists(), reason="console script not installed: run .venv/bin/pip install -e ."
)

# One route per step, so the simulator's counts say which step was sent.
CHAIN = """
    providers:
      codex: {type: openai, model: sim-codex}
      claude: {type: anthropic, model: sim-claude}
      gemini: {type: gemini, model: sim-gemini}
    agents:
      first: {providers: [codex], max_retries: 0}
      second: {providers: [claude], max_retries: 0}
      third: {providers: [gemini], max_retries: 0}
    workflows:
      review:
        phases:
          - name: Reviews
            parallel: true
            steps:
              - {name: a, agent: first, prompt: "Review A: {diff}"}
              - {name: b, agent: second, prompt: "Review B: {diff}"}
          - name: Verdict
            steps:
              - {name: c, agent: third, prompt: "Merge {a.text} and {b.text}"}
    """


def _wait(what: Callable[[], bool], timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


@pytest.fixture(params=["sqlite", "postgres", "dbos"])
def setup(
    request: pytest.FixtureRequest, tmp_path: Path, simulated_server: SimulatedServer
) -> tuple[list[str], dict[str, str], SimulatedServer]:
    chain = write_chain(tmp_path, CHAIN)
    (tmp_path / "pr.diff").write_text("--- a/x\n+++ b/x\n+fix\n")
    env = {**os.environ, **simulated_server.environment()}
    cmd = [
        str(FAILOVER),
        "run",
        str(chain),
        "--workflow",
        "review",
        "--input",
        f"diff=@{tmp_path / 'pr.diff'}",
        "--journal",
        str(tmp_path / "journal.db"),
    ]
    if request.param in ("postgres", "dbos"):
        cmd[-1] = request.getfixturevalue("postgres_url")
        # One database for the session: the run ids below are unique per test.
    if request.param == "dbos":
        pytest.importorskip("dbos", reason="dbos not installed: pip install '.[dbos]'")
        cmd[-1] = "dbos+" + cmd[-1]
    return cmd, env, simulated_server


def _counts(sim: SimulatedServer) -> tuple[int, int, int]:
    return sim.count("openai"), sim.count("anthropic"), sim.count("gemini")


def _killed_in_phase_two(cmd: list[str], env: dict[str, str], sim: SimulatedServer) -> None:
    """Start the run, SIGKILL it once phase 1 is done and phase 2's call is in flight."""
    sim.script("gemini", [Fault.hang()])
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait(lambda: sim.count("gemini") == 1)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL and _counts(sim) == (1, 1, 1)


def test_a_killed_run_resumes_without_sending_completed_steps_again(
    setup: tuple[list[str], dict[str, str], SimulatedServer],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cmd, env, sim = setup
    for var, value in sim.environment().items():  # the uninterrupted run, in this process
        monkeypatch.setenv(var, value)
    assert main([*cmd[1:], "--run-id", "whole"]) == 0
    whole = capsys.readouterr().out
    sim.reset()
    _killed_in_phase_two([*cmd, "--run-id", "pr-7"], env, sim)
    again = subprocess.run(
        [*cmd, "--run-id", "pr-7"], env=env, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 0, again.stderr
    assert _counts(sim) == (1, 1, 2)  # only the step in flight was sent again
    assert again.stdout == whole
    assert main(["runs", "show", "pr-7", "--journal", cmd[-1], "--plain"]) == 0
    assert "3/3 steps done" in capsys.readouterr().out


def test_two_processes_racing_to_resume_one_run_exactly_one_wins(
    setup: tuple[list[str], dict[str, str], SimulatedServer],
) -> None:
    cmd, env, sim = setup
    _killed_in_phase_two([*cmd, "--run-id", "pr-8"], env, sim)
    sim.script("gemini", [Fault.delay(2.0)])  # the winner holds the run for seconds
    racers = [
        subprocess.Popen(
            [*cmd, "--run-id", "pr-8"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in racers]
    codes = sorted(p.returncode for p in racers)
    assert codes == [0, 1], outs
    (loser,) = [err for p, (_, err) in zip(racers, outs, strict=True) if p.returncode == 1]
    assert "run 'pr-8' is being run by another process" in loser
    assert _counts(sim) == (1, 1, 2)  # the loser sent nothing
