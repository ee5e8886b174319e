"""Chain-file keys for an agent's telemetry: ``tracing`` and ``capture_content``."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_config
from tests.conftest import write_chain

ENV = {"GEMINI_API_KEY": "gm-test-0123456789"}
CHAIN = """\
providers:
  fast: {type: gemini, model: gemini-sim, base_url: "http://127.0.0.1:9/gemini", api_key: "${GEMINI_API_KEY}"}
agents:
  quiet:
    providers: [fast]
    tracing: false
  verbose:
    providers: [fast]
    capture_content: {capture}
  plain:
    providers: [fast]
"""


def test_the_chain_file_sets_tracing_and_capture_content(tmp_path: Path) -> None:
    config = load_config(write_chain(tmp_path, CHAIN.replace("{capture}", "true")), environ=ENV)
    quiet, verbose, plain = (config.agents[n] for n in ("quiet", "verbose", "plain"))
    assert (quiet.tracing, quiet.capture_content) == (False, False)
    assert (verbose.tracing, verbose.capture_content) == (True, True)
    assert (plain.tracing, plain.capture_content) == (True, False)  # FallbackAgent's defaults


@pytest.mark.parametrize("value", ["'yes please'", "3", "[true]"])
def test_a_bad_capture_content_names_the_key_and_value(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="capture_content") as info:
        load_config(write_chain(tmp_path, CHAIN.replace("{capture}", value)), environ=ENV)
    assert "verbose" in str(info.value)
