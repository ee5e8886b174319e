"""The sample deployment's chain file loads, and names its key file."""

from __future__ import annotations

from pathlib import Path

from orchestrator.config import load_config
from orchestrator.health import RedisHealthStore

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_the_example_chain_file_loads() -> None:
    env = {k: "sk-example" for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")}
    env["REDIS_URL"] = "redis://:hunter2@redis.internal:6379/0"
    config = load_config(DEPLOY / "chain.example.yaml", environ=env)
    assert sorted(config.agents) == ["cheap-first", "claude-first"]
    assert config.gateway == {"keys_file": "gateway.keys"}
    (store,) = config.health_stores  # both agents share one Redis store
    assert isinstance(store, RedisHealthStore) and "hunter2" not in repr(store)


def test_the_unit_and_the_image_drain_within_their_stop_timeouts() -> None:
    unit = (DEPLOY / "failover-serve.service").read_text()
    assert "--grace 30" in unit and "TimeoutStopSec=40" in unit and "KillSignal=SIGTERM" in unit
    image = (DEPLOY / "Containerfile").read_text()
    assert "STOPSIGNAL SIGTERM" in image and '"--grace", "30"' in image
