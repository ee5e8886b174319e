"""``failover serve`` refuses, with the fix named, what it cannot serve: exit 2 before binding."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.conftest import write_chain

PROVIDERS = """
providers:
  fn: {type: function, path: "json:dumps"}
"""


def test_a_chain_file_with_no_agents_is_an_error_not_a_gateway_of_404s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chain = write_chain(tmp_path, PROVIDERS)
    assert main(["serve", str(chain), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{chain} has no agents (and no workflows) to serve" in err
    assert "agents:" in err and "failover serve:" in err


def test_a_missing_keys_file_says_where_it_looked_and_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    chain = write_chain(tmp_path, PROVIDERS + "agents:\n  m: {providers: [fn]}\n")
    assert main(["serve", str(chain), "--port", "0", "--keys-file", "nope.keys"]) == 2
    err = capsys.readouterr().err
    assert f"key file {tmp_path / 'nope.keys'} not found (--keys-file)" in err
    assert "failover serve --hash-key" in err

    named = write_chain(
        tmp_path / "sub" if (tmp_path / "sub").mkdir() is None else tmp_path,
        PROVIDERS + "agents:\n  m: {providers: [fn]}\ngateway:\n  keys_file: team.keys\n",
    )
    assert main(["serve", str(named), "--port", "0"]) == 2
    err = capsys.readouterr().err
    # Relative to the chain file, not to the working directory; the key named by the file.
    assert f"key file {tmp_path / 'sub' / 'team.keys'} not found" in err
    assert f"gateway.keys_file of {named}" in err and "--hash-key" in err


def test_a_clients_misspelt_tool_schema_stays_out_of_the_gateways_log(tmp_path: Path) -> None:
    # The chain file's own ignored setting is shown once, at start; a client's schema
    # (request text) never reaches the gateway's stderr.
    import contextlib
    import json
    import os
    import subprocess
    import sys
    import urllib.request

    chain = write_chain(
        tmp_path,
        PROVIDERS + "agents:\n  m: {providers: [fn], hedge_after: 0.5}\n",
    )
    env = {**os.environ, "FAILOVER_GATEWAY_KEYS": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "providers.serve", str(chain), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[2]
        tool = {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {"type": "object", "propertes": {"q": {"type": "string"}}},
            },
        }
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
        request = urllib.request.Request(
            url + "/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        for _ in range(3):  # the function provider's answer (an error) does not matter here
            with contextlib.suppress(urllib.error.HTTPError):
                urllib.request.urlopen(request, timeout=30).read()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "propertes" not in err and "lookup" not in err
    assert err.count("hedge_after=0.5 has no effect") == 1, err
