"""The example chain files load, and every example script runs offline in seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config import load_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ENV = {
    "OPENAI_API_KEY": "k",
    "ANTHROPIC_API_KEY": "k",
    "GEMINI_API_KEY": "k",
}


def test_chain_yaml_and_toml_build_the_same_chains() -> None:
    yaml_cfg = load_config(EXAMPLES / "chain.yaml", environ=ENV)
    toml_cfg = load_config(EXAMPLES / "chain.toml", environ=ENV)
    for cfg in (yaml_cfg, toml_cfg):
        assert [c.name for c in cfg.agents["review"].children] == ["codex", "claude", "gemini"]
        assert cfg.agents["summary"].children[1] is cfg.agents["review"]
        assert list(cfg.workflows) == ["release"]
    assert yaml_cfg.agents["review"].policies == toml_cfg.agents["review"].policies
    assert yaml_cfg.provider_types == toml_cfg.provider_types


def test_chain_file_needs_the_keys_in_the_environment() -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY is not set"):
        load_config(EXAMPLES / "chain.yaml", environ={})


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("chain_file.py", "answered by claude after 4 attempt(s)"),
        ("cost_tiers.py", "answer from claude-opus"),
        ("multi_region.py", "answered by openai-eu-west"),
        ("review_workflow.py", "correctness: answered by claude"),
        ("slow_providers.py", "silent primary: answered by anthropic:claude-haiku-4-5"),
        ("workflow_composition.py", "fallback plan-then-write -> claude (FallbackError)"),
    ],
)
def test_example_runs_offline(script: str, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
