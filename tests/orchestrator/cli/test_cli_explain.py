"""``failover explain``: the order a run would try, without sending anything; a real run
over loopback HTTP (the simulator) then tries exactly that order."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from orchestrator.cli import main
from providers.simulator import Fault, SimulatedServer
from tests.conftest import write_chain

SECRET_PROMPT = "the patient's name is Ada Example"

CHAIN = """
    providers:
      dear: {type: openai, model: m1, base_url: "${SIM}/openai/v1", api_key: "${K}", price: [15, 60]}
      cheap: {type: openai, model: m2, base_url: "${SIM}/openai/v1", api_key: "${K}", price: [0.1, 0.4]}
      mid: {type: anthropic, model: m3, base_url: "${SIM}/anthropic", api_key: "${K}", price: [3, 15]}
      tiny: {type: openai, model: m4, base_url: "${SIM}/openai/v1", api_key: "${K}", price: [0, 0],
             context_window: 1000}
    agents:
      review:
        providers: [dear, tiny, cheap, mid]
        order: cost
        max_retries: 0
      ab:
        providers: [cheap, mid]
        split: {control: 0.5, experiment: 0.5}
        hedge_after: null
      outer:
        providers: [{agent: ab}, dear]
        affinity: {ttl: 60}
    """


@pytest.fixture
def chain(
    tmp_path: Path, simulated_server: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The chain file on the plugin's simulator (reset for the test) and a long prompt file
    (over 1,000 tokens however counted: the tiny provider's window cannot take it)."""
    monkeypatch.setenv("SIM", simulated_server.url)
    monkeypatch.setenv("K", "sk-test")
    (tmp_path / "p.txt").write_text(SECRET_PROMPT + " word" * 40000)
    return write_chain(tmp_path, CHAIN)


@pytest.fixture
def sim(simulated_server: SimulatedServer) -> SimulatedServer:
    return simulated_server


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_json_is_the_order_a_real_run_tries(
    chain: Path, sim: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = str(chain.parent / "p.txt")
    code, out, err = _main(
        ["explain", str(chain), "--agent", "review", "--prompt-file", prompt, "--json"], capsys
    )
    assert code == 0, err
    shown = json.loads(out)["order"]
    assert [c["name"] for c in shown] == ["tiny", "cheap", "mid", "dear"]  # cheapest first
    assert [c["skipped"] for c in shown] == [True, False, False, False]
    assert shown[0]["reason"] == "context_window" and shown[0]["error"] == "ContextWindowExceeded"
    assert sim.count() == 0  # nothing was sent
    assert "Ada" not in out + err
    sys.stdin = io.StringIO(SECRET_PROMPT + " word" * 40000)
    try:
        code, out, err = _main(["run", str(chain), "--agent", "review", "--json", "-"], capsys)
    finally:
        sys.stdin = sys.__stdin__
    assert code == 0, err
    ran = json.loads(out)
    assert ran["order"] == [c["name"] for c in shown]
    assert [(a["agent"], a["attempt_number"]) for a in ran["attempts"]] == [
        ("tiny", 0),
        ("cheap", 1),
    ]


def test_explain_table_shows_skips_with_reasons_and_a_nested_split_arm(
    chain: Path, sim: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.set_default("openai", Fault.ok())
    prompt = str(chain.parent / "p.txt")
    argv = ["explain", str(chain), "--agent", "outer", "--prompt-file", prompt, "--plain"]
    code, out, err = _main([*argv, "--affinity", "user-1"], capsys)
    assert code == 0, err
    assert "split arm" in out and "ab" in out and "user-1" not in out
    code, out, err = _main([*argv[:-1], "--json", "--affinity", "user-1"], capsys)
    assert code == 0, err
    shown = json.loads(out)["order"]
    arm = shown[0]["arm"]
    assert arm in ("control", "experiment")
    assert shown[0]["children"][0]["name"] == ("cheap" if arm == "control" else "mid")
    assert sim.count() == 0
    run = ["run", str(chain), "--agent", "outer", "--json", "hi", "--affinity", "user-1"]
    code, out, err = _main(run, capsys)
    assert code == 0, err
    ran = json.loads(out)
    assert ran["arm"] == arm and ran["handled_by"] == shown[0]["children"][0]["name"]


def test_explain_refuses_a_missing_prompt_file_and_an_unknown_agent(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _main(
        ["explain", str(chain), "--agent", "review", "--prompt-file", "nope.txt"], capsys
    )
    assert code == 2 and "--prompt-file 'nope.txt'" in err
    # the same words as run's --input @FILE: one reader of a bounded file serves both
    assert "--prompt-file 'nope.txt': cannot read it (No such file or directory)" in err
    prompt = str(chain.parent / "p.txt")
    code, _, err = _main(["explain", str(chain), "--agent", "x", "--prompt-file", prompt], capsys)
    assert code == 2 and "no agent 'x'" in err
