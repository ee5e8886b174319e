"""Chain-file keys for deadlines inside a call and hedging."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_config
from orchestrator.engine.deadlines import Watched
from tests.conftest import write_chain

ENV = {"OPENAI_API_KEY": "sk-test-0123456789", "ANTHROPIC_API_KEY": "sk-ant-test-0123"}
CHAIN = """\
providers:
  fast:
    type: openai
    model: gpt-4o-mini
    base_url: http://127.0.0.1:9/openai/v1
    api_key: ${OPENAI_API_KEY}
    first_token_timeout: 2
    idle_timeout: 1.5
  backup:
    type: anthropic
    model: claude-sim
    base_url: http://127.0.0.1:9/anthropic
    api_key: ${ANTHROPIC_API_KEY}
agents:
  main:
    providers: [fast, backup]
    first_token_timeout: 0.5
    idle_timeout: 0.3
    hedge_after: {hedge}
    max_hedges: 1
"""


@pytest.mark.parametrize(
    ("hedge", "after", "percentile"), [("0.4", 0.4, None), ("p95", None, 95.0)]
)
def test_the_chain_file_sets_deadlines_and_hedging(
    tmp_path: Path, hedge: str, after: float | None, percentile: float | None
) -> None:
    config = load_config(write_chain(tmp_path, CHAIN.replace("{hedge}", hedge)), environ=ENV)
    agent = config.agents["main"]
    fast, backup = (m.callee for m in agent.members)  # type: ignore[union-attr]
    assert isinstance(fast, Watched) and isinstance(backup, Watched)
    assert (fast.watch.first_token, fast.watch.idle) == (2.0, 1.5)  # the provider's own
    assert (backup.watch.first_token, backup.watch.idle) == (0.5, 0.3)  # the agent's default
    assert agent.hedge is not None
    assert (agent.hedge.after, agent.hedge.percentile) == (after, percentile)


def test_a_bad_hedge_after_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="hedge_after"):
        load_config(write_chain(tmp_path, CHAIN.replace("{hedge}", "soon")), environ=ENV)
