"""The chain file's ``health:``: ``true`` or a store with circuit and budget settings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_config
from orchestrator.health import MemoryHealthStore, RedisHealthStore
from tests.conftest import write_chain

BASE = """
providers:
  fn: {type: function, path: "os:getcwd"}
agents:
"""


def _load(tmp_path: Path, agents: str, **env: str) -> object:
    return load_config(write_chain(tmp_path, BASE + agents), environ=env)


def _error(tmp_path: Path, agents: str, **env: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, agents, **env)
    return str(info.value)


def test_settings_reach_the_store_and_equal_settings_share_one(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        """
  a:
    providers: [fn]
    health: {redis_url: "${R}", key_prefix: "x:", circuit: {failure_threshold: 3, cooldown: 5},
             budget: {ratio: 1.0, min_per_second: 2}}
  b:
    providers: [fn]
    health: {redis_url: "${R}", key_prefix: "x:", circuit: {failure_threshold: 3, cooldown: 5},
             budget: {ratio: 1.0, min_per_second: 2}}
  c:
    providers: [fn]
    health: {circuit: {window: 60}}
  d: {providers: [fn], health: true}
  e: {providers: [fn]}
""",
        R="redis://127.0.0.1:1/0",
    )
    agents = config.agents  # type: ignore[attr-defined]
    store = agents["a"].health_store
    assert isinstance(store, RedisHealthStore) and agents["b"].health_store is store
    assert store.key_prefix == "x:"
    assert (store.circuit.failure_threshold, store.circuit.cooldown) == (3, 5.0)
    assert store.circuit.failure_ratio == 0.5  # left out: the class's default
    assert (store.budget.ratio, store.budget.min_per_second) == (1.0, 2.0)
    memory = agents["c"].health_store
    assert isinstance(memory, MemoryHealthStore) and memory.circuit.window == 60.0
    assert isinstance(agents["d"].health_store, MemoryHealthStore)
    assert agents["e"].health_store is None
    assert len(config.health_stores) == 3  # type: ignore[attr-defined]
    assert "redis://" not in repr(config)


def test_errors_name_file_line_and_field(tmp_path: Path) -> None:
    text = _error(
        tmp_path,
        """
  a:
    providers: [fn]
    health:
      circuit: {window: -1, cooldwn: 3}
      budget: {ratio: 2}
  b: {providers: [fn], health: sometimes}
""",
    )
    lines = text.splitlines()
    for wanted in (
        "chain.yaml:9: agents.a.health.circuit.window: -1 is not allowed; use a number > 0",
        "agents.a.health.circuit.cooldwn: unknown key (did you mean 'cooldown'?)",
        "chain.yaml:10: agents.a.health.budget.ratio: 2 is not allowed; use a number <= 1",
        "chain.yaml:11: agents.b.health: 'sometimes' is not true or false",
    ):
        assert any(wanted in line for line in lines), (wanted, lines)
    assert len(lines) == 4  # one problem each: no noise from the other member of the union


def test_a_rule_only_the_class_knows_is_located_at_the_health_key(tmp_path: Path) -> None:
    text = _error(
        tmp_path,
        """
  a:
    providers: [fn]
    health: {circuit: {cooldown: 60, max_cooldown: 10}}
""",
    )
    assert (
        "chain.yaml:8: agents.a.health: CircuitBreaker: max_cooldown=10.0 must be >= cooldown=60.0"
        in text
    )


def test_the_url_is_a_secret(tmp_path: Path) -> None:
    literal = _error(
        tmp_path,
        """
  a: {providers: [fn], health: {redis_url: "redis://:hunter2pw@cache:6379/0"}}
""",
    )
    assert "agents.a.health.redis_url: a literal secret is not allowed" in literal
    assert 'redis_url: "${REDIS_URL}"' in literal and "hunter2" not in literal
    shown = _error(tmp_path, '  a: {providers: [fn], health: {redis_url: "http://cache:1"}}\n')
    assert "agents.a.health.redis_url: (hidden) is not a redis://" in shown
    assert "cache" not in shown.split("redis_url:", 1)[1]


def test_store_options_need_redis_url(tmp_path: Path) -> None:
    text = _error(tmp_path, '  a: {providers: [fn], health: {key_prefix: "x:"}}\n')
    assert "agents.a.health: key_prefix, sync_interval and timeout need redis_url" in text


def test_without_the_redis_package_the_fix_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "redis" else real(name, *a)
    )
    text = _error(
        tmp_path, '  a: {providers: [fn], health: {redis_url: "${R}"}}\n', R="redis://h:1/0"
    )
    assert "agents.a.health.redis_url: a Redis health store needs the redis package" in text
    assert "failover-orchestrator[redis]" in text
