"""Chain-file keys mean what the Python keywords mean: one rule (issue 10).

``fallback_on:`` in a chain file adds to the taxonomy's hand-over set, as
``fallback_on=`` does in Python: a 503 keeps failing over.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from orchestrator.config import load_config
from tests.conftest import hooks_module

HOOKS = """
from orchestrator.errors import ServerError

calls = []

def down(request):
    calls.append("down")
    raise ServerError("unavailable", status=503)

def backup(request):
    return "from backup"
"""


def test_chain_file_fallback_on_adds_to_the_defaults(tmp_path: Path) -> None:
    name = hooks_module(tmp_path, "semhooks", HOOKS)
    path = tmp_path / "chain.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            providers:
              primary: {{type: function, path: "{name}:down", run_in_thread: false}}
              backup: {{type: function, path: "{name}:backup", run_in_thread: false}}
            agents:
              main:
                providers: [primary, backup]
                max_retries: 1
                retry_strategy: none
                fallback_on: ["builtins:KeyError"]
                retry_on: ["builtins:KeyError"]
            """
        )
    )
    agent = load_config(path, environ={}).agent("main")
    result = agent.run_sync("x")
    assert result.handled_by == "backup" and result.text == "from backup"
    assert [a.agent for a in result.attempts] == ["primary", "primary", "backup"]


def test_chain_file_hook_with_the_wrong_signature_is_a_located_error(tmp_path: Path) -> None:
    import pytest

    from orchestrator.config import ConfigError

    name = hooks_module(tmp_path, "semhooks", HOOKS + "\ndef notify(frm, to):\n    pass\n")
    path = tmp_path / "chain.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            providers:
              backup: {{type: function, path: "{name}:backup"}}
            agents:
              main:
                providers: [backup]
                on_fallback: {name}:notify
            """
        )
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    text = str(info.value)
    assert "chain.yaml:5" in text and "on_fallback(from_name, to_name, error)" in text
