"""``failover run --stream``: an agent's text reaches stdout as it arrives."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import main
from providers.simulator import Fault, SimulatedServer
from tests.conftest import write_chain

FAILOVER = Path(sys.executable).parent / "failover"
CHAIN = """
    providers:
      codex: {type: openai, model: gpt-4o-mini, base_url: "${SIM}/openai/v1", api_key: "${K}"}
      claude: {type: anthropic, model: claude-x, base_url: "${SIM}/anthropic", api_key: "${K}"}
    agents:
      review: {providers: [codex, claude], max_retries: 0}
    workflows:
      release:
        phases: [{name: P, steps: [{name: s, agent: review}]}]
    """


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatedServer]:
    with SimulatedServer.in_thread() as server:
        yield server


@pytest.fixture
def chain(tmp_path: Path, sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    sim.reset()
    monkeypatch.setenv("SIM", sim.url)
    monkeypatch.setenv("K", "sk-stream-test-0123456789")
    return write_chain(tmp_path, CHAIN)


def _read_some(fd: int, timeout: float) -> bytes:
    ready, _, _ = select.select([fd], [], [], timeout)
    return os.read(fd, 65536) if ready else b""


@pytest.mark.skipif(not FAILOVER.exists(), reason="console script not installed: pip install -e .")
def test_text_is_on_stdout_before_the_reply_has_ended(chain: Path, sim: SimulatedServer) -> None:
    sim.set_default("openai", Fault.ok("alpha beta gamma", chunks=3, interval=1.0))
    proc = subprocess.Popen(
        [str(FAILOVER), "run", str(chain), "--agent", "review", "--stream", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    try:
        assert proc.stdout is not None
        first = b""
        deadline = time.monotonic() + 60
        while not first and time.monotonic() < deadline:
            first = _read_some(proc.stdout.fileno(), 1.0)
        assert first, "no text within 60 s"
        assert proc.poll() is None  # the rest of the reply is still on its way
        assert first.decode() in "alpha beta gamma"
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert (first + rest).decode() == "alpha beta gamma\n"


def test_stream_falls_over_before_the_first_chunk(
    chain: Path, sim: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.set_default("openai", Fault.server_error(503))
    sim.set_default("anthropic", Fault.ok("from claude", chunks=2))
    assert main(["run", str(chain), "--agent", "review", "--stream", "-v", "hi"]) == 0
    out, err = capsys.readouterr()
    assert out == "from claude\n"
    assert "fallback codex -> claude" in err


def test_a_failed_stream_ends_its_line_and_exits_1(
    chain: Path, sim: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.set_default("openai", Fault.server_error(503))
    sim.set_default("anthropic", Fault.server_error(503))
    assert main(["run", str(chain), "--agent", "review", "--stream", "hi"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "review" in err and "sk-stream" not in err


def test_stream_is_refused_with_json_and_for_workflows(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "--agent", "review", "--stream", "--json", "hi"]) == 2
    assert "choose one" in capsys.readouterr().err
    assert main(["run", str(chain), "--workflow", "release", "--stream", "hi"]) == 2
    err = capsys.readouterr().err
    assert "a workflow's steps answer phase by phase" in err and "-v" in err


def test_a_healthy_stream_with_slow_tail_events_exits_0(
    tmp_path: Path, sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17 item 2: 0.2 s between Anthropic SSE events under ``idle_timeout: 0.5``
    printed the whole answer and exited 1 (the tail events did not count as progress)."""
    sim.reset()
    monkeypatch.setenv("SIM", sim.url)
    monkeypatch.setenv("K", "sk-stream-test-0123456789")
    chain = write_chain(
        tmp_path,
        """
        providers:
          claude: {type: anthropic, model: claude-x, base_url: "${SIM}/anthropic", api_key: "${K}"}
        agents:
          slow: {providers: [claude], max_retries: 0, idle_timeout: 0.5}
        """,
    )
    sim.set_default("anthropic", Fault.ok("the whole answer", chunks=2, interval=0.2))
    assert main(["run", str(chain), "--agent", "slow", "--stream", "hi"]) == 0
