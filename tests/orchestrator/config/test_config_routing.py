"""Chain-file keys for routing: ``order:``, ``weights:``, ``split:`` and ``affinity:``."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import Split
from orchestrator.config import ConfigError, load_config
from orchestrator.routing.strategies import LatencyFirst, Weighted
from tests.conftest import write_chain

ENV = {"OPENAI_API_KEY": "sk-test-0123456789"}
PROVIDERS = """\
providers:
  east: {type: openai, model: m, base_url: http://127.0.0.1:9/openai/v1, api_key: "${OPENAI_API_KEY}"}
  west: {type: openai, model: m, base_url: http://127.0.0.1:9/openai/v1, api_key: "${OPENAI_API_KEY}"}
  eu: {type: openai, model: m, base_url: http://127.0.0.1:9/openai/v1, api_key: "${OPENAI_API_KEY}"}
"""


def test_the_chain_file_sets_order_weights_split_and_affinity(tmp_path: Path) -> None:
    chain = (
        PROVIDERS
        + """\
agents:
  regions:
    providers: [east, west, eu]
    order: latency
    affinity: {ttl: 120}
  weighted:
    providers: [east, west, eu]
    order: weighted
    weights: {east: 1, west: 3}
  ab:
    providers: [east, west]
    split: {control: 0.9, experiment: 0.1}
  main:
    providers: [{agent: ab}, eu]
"""
    )
    config = load_config(write_chain(tmp_path, chain), environ=ENV)
    regions, weighted, ab = (config.agents[n] for n in ("regions", "weighted", "ab"))
    assert isinstance(regions.router.strategy, LatencyFirst)
    assert regions.router.affinity_ttl == 120.0
    assert isinstance(weighted.router.strategy, Weighted)
    assert weighted.router.strategy.cumulative == [1.0, 4.0, 4.0]  # eu unnamed: weight 0
    assert isinstance(ab, Split) and ab.arms == {"control": 0.9, "experiment": 0.1}
    assert config.agents["main"].children[0] is ab


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("    order: fastest\n", "order"),
        ("    order: weighted\n    weights: {north: 1}\n", "weights: 'north' names no child"),
        ("    split: {a: 1}\n", r"Split: 1 arms \['a'\] for 3 children"),
        (
            "    split: {a: 1, b: 1, c: 1}\n    order: cost\n",
            "split: the arms' weights are the order",
        ),
        ("    affinity: {ttl: 0}\n", "affinity.ttl"),
    ],
)
def test_a_wrong_routing_key_is_an_error_located_at_the_agent(
    tmp_path: Path, agent: str, message: str
) -> None:
    chain = PROVIDERS + "agents:\n  main:\n    providers: [east, west, eu]\n" + agent
    with pytest.raises(ConfigError, match=message) as e:
        load_config(write_chain(tmp_path, chain), environ=ENV)
    assert "chain.yaml:" in str(e.value)
