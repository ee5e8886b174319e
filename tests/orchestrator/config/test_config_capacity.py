"""The chain file's ``limits`` (per provider) and ``budget`` (per agent or provider)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import Budget, Limits
from orchestrator.config import ConfigError, load_config
from tests.conftest import write_chain


def fast_chain(provider: list[str], agent: list[str]) -> str:
    """A chain file of one function provider ``fast`` with the keys ``provider`` (lines of
    YAML, from line 6 on) and one agent ``main`` of it with the keys ``agent``."""
    keys = "\n        "  # the next line at the same indent
    return f"""
    providers:
      fast:
        type: function
        path: "os:getcwd"
        {keys.join(provider)}
    agents:
      main:
        providers: [fast]
        {keys.join(agent)}
    """


def test_limits_and_budgets_reach_the_provider_and_the_agent(tmp_path: Path) -> None:
    chain = fast_chain(
        ["limits: {rpm: 600, tpm: 150000, max_concurrency: 64}", "budget: {usd: 5, per: hour}"],
        ["budget: {usd: 50, per: day}", "wait_for_capacity: 2"],
    )
    agent = load_config(write_chain(tmp_path, chain)).agents["main"]
    provider = agent.children[0]
    assert provider.limits == Limits(rpm=600, tpm=150_000, max_concurrency=64)  # type: ignore[union-attr]
    assert provider.budget == Budget(usd=5, per="hour")  # type: ignore[union-attr]
    assert (agent.capacity.budget, agent.capacity.wait) == (Budget(usd=50, per="day"), 2.0)


def test_bad_limits_and_budgets_are_located_errors(tmp_path: Path) -> None:
    chain = fast_chain(["limits: {rpm: 0, tmp: 5}"], ["budget: {usd: 50, per: week}"])
    with pytest.raises(ConfigError) as info:
        load_config(write_chain(tmp_path, chain))
    text = str(info.value)
    assert "chain.yaml:6: providers.fast.limits.rpm: 0 is not allowed" in text
    assert "providers.fast.limits.tmp: unknown key (did you mean 'tpm'?)" in text
    assert "agents.main.budget.per: 'week' is not one of minute, hour, day, month" in text


def test_replicas_reach_the_redis_stores_capacity(tmp_path: Path) -> None:
    chain = """
    providers:
      fn: {type: function, path: "os:getcwd"}
    agents:
      main:
        providers: [fn]
        health: {redis_url: "redis://127.0.0.1:1/0", replicas: 8}
    """
    store = load_config(write_chain(tmp_path, chain)).agents["main"].health_store
    assert store.capacity.replicas == 8  # type: ignore[union-attr]
    alone = chain.replace('redis_url: "redis://127.0.0.1:1/0", ', "")
    with pytest.raises(ConfigError, match="replicas needs redis_url"):
        load_config(write_chain(tmp_path, alone))
