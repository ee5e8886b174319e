"""Cost you can see (issue 17, item 8): each attempt's cost in ``failover run -v``, and a
total that leaves billed attempts out is marked (``Result.unpriced_attempts``, ``--json``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import FallbackAgent, Response, Usage
from orchestrator.cli import main
from orchestrator.errors import InvalidOutput, ServerError
from providers.simulator import Fault, SimulatedServer
from tests.conftest import Scripted, simulated_chain

# No base_url and no api_key: the providers read the simulator's from the environment.
CHAIN = """
    providers:
      priced: {type: openai, model: sim-a, price: [1, 2]}
      unpriced: {type: anthropic, model: sim-b}
    agents:
      priced_first: {providers: [priced, unpriced], max_retries: 0}
      unpriced_first: {providers: [unpriced, priced], max_retries: 0}
    """


@pytest.fixture
def chain(
    tmp_path: Path, simulated_server: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> Path:
    return simulated_chain(tmp_path, CHAIN, simulated_server, monkeypatch)


def _verbose(chain: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["run", str(chain), "--agent", agent, "-v", "hi"]) == 0
    return [line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines()]


def test_verbose_shows_each_attempts_cost_and_the_total(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    simulated_server.script(
        "openai", [Fault.ok("yes", usage=(100, 200))]
    )  # 100 * $1 + 200 * $2 per 1M
    lines = _verbose(chain, "priced_first", capsys)
    (ok,) = [line for line in lines if " try 1 ok in " in line]
    assert ok.startswith("priced_first: priced try 1 ok in ")
    assert ok.endswith(", $0.000500")
    assert lines[-1].startswith("priced_first: answered by priced after 1 attempt(s) in ")
    assert lines[-1].endswith(", $0.000500")


def test_verbose_says_when_a_billed_attempt_has_no_price(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    simulated_server.script(
        "openai", [Fault.server_error(503)]
    )  # failed, not billed: no cost to show
    simulated_server.script("anthropic", [Fault.ok("yes", usage=(100, 200))])
    lines = _verbose(chain, "priced_first", capsys)
    (failed,) = [line for line in lines if " failed after " in line]
    assert "$" not in failed and "cost" not in failed
    (ok,) = [line for line in lines if " try 1 ok in " in line]
    assert ok.endswith(", cost unknown (no price)")
    assert lines[-1].endswith(", cost unknown (1 attempt(s) with no price)")


def test_json_marks_a_total_that_leaves_attempts_out(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    simulated_server.script("anthropic", [Fault.ok("yes", usage=(100, 200))])
    assert main(["run", str(chain), "--agent", "unpriced_first", "--json", "hi"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["cost_usd"], data["unpriced_attempts"]) == (None, 1)
    simulated_server.script("openai", [Fault.ok("yes", usage=(100, 200))])
    assert main(["run", str(chain), "--agent", "priced_first", "--json", "hi"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["cost_usd"], data["unpriced_attempts"]) == (pytest.approx(0.0005), 0)


async def test_unpriced_attempts_are_the_billed_ones_cost_usd_leaves_out() -> None:
    billed_unpriced = InvalidOutput("bad JSON", provider="a", usage=Usage(10, 5))
    a = Scripted("a", [billed_unpriced])  # a reply it could not use: billed, no price
    b = Scripted("b", [ServerError("503")])  # failed before any token: not billed
    c = Scripted("c", [Response("ok", usage=Usage(10, 5), cost_usd=0.25)])
    result = await FallbackAgent([a, b, c], max_retries=0).run("hi")
    assert result.cost_usd == 0.25  # a lower bound: the first attempt is not in it
    assert [x.agent for x in result.unpriced_attempts] == ["a"]
    assert [x.unpriced for x in result.attempts] == [True, False, False]
    free = await FallbackAgent([Scripted("d", ["ok"])]).run("hi")  # no usage, no price
    assert [x.agent for x in free.unpriced_attempts] == ["d"]


def test_json_shows_the_prompt_caches_part_of_the_input(
    chain: Path, simulated_server: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # A cache read is billed at its own rate: the tokens behind a cost must be in the report.
    simulated_server.script("openai", [Fault.ok("yes", usage=(1000, 20, 600, 0))])
    assert main(["run", str(chain), "--agent", "priced_first", "--json", "hi"]) == 0
    data = json.loads(capsys.readouterr().out)
    cached = {"input_tokens": 1000, "output_tokens": 20, "cache_read_tokens": 600}
    assert data["usage"] == {**cached, "cache_write_tokens": 0}
    assert data["attempts"][0]["usage"] == data["usage"]
    simulated_server.script("openai", [Fault.ok("yes", usage=(1000, 20))])
    assert main(["run", str(chain), "--agent", "priced_first", "--json", "hi"]) == 0
    assert json.loads(capsys.readouterr().out)["usage"] == {
        "input_tokens": 1000,
        "output_tokens": 20,
    }
