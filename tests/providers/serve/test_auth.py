"""Gateway keys: who gets in, how keys are compared, and that no key crosses the gateway."""

from __future__ import annotations

import argparse
from pathlib import Path

import aiohttp
import pytest

from orchestrator import FallbackAgent
from providers import SimulatedServer
from providers.serve import GatewayKeys, hash_key
from providers.serve import command as serve_command
from providers.serve.auth import presented_key
from tests.conftest import write_chain
from tests.providers.serve.conftest import UPSTREAM_KEY, Recorder, fallback, gateway

CHAT = "/v1/chat/completions"
CHAIN = """
providers:
  fn: {type: function, path: "json:dumps"}
agents:
  m: {providers: [fn]}
"""
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_keys_from_the_environment_and_a_hashed_file(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# team a\n{hash_key('file-key')}\n\n")
    keys = GatewayKeys.load({"FAILOVER_GATEWAY_KEYS": "env-1, env-2"}, str(keys_file))
    assert len(keys) == 3
    assert keys.allows("env-1") and keys.allows("env-2") and keys.allows("file-key")
    assert not keys.allows("env-3") and not keys.allows("") and not keys.allows(None)
    assert not keys.allows("x" * 5000)
    assert "env-1" not in repr(keys) and "file-key" not in keys_file.read_text()


def test_a_bad_key_file_line_is_named_without_echoing_it(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("sk-live-plaintext-key\n")
    with pytest.raises(ValueError, match=r"keys:1: expected 'sha256:'") as info:
        GatewayKeys.load({}, str(keys_file))
    assert "plaintext" not in str(info.value)


def test_bearer_and_x_api_key_are_both_read() -> None:
    assert presented_key("Bearer abc", None) == "abc"
    assert presented_key("bearer  abc ", None) == "abc"
    assert presented_key(None, "xyz") == "xyz"
    assert presented_key("Basic abc", None) is None


async def test_only_clients_with_a_key_get_in_and_their_key_is_not_forwarded(
    sim: SimulatedServer,
) -> None:
    keys = GatewayKeys.load({"FAILOVER_GATEWAY_KEYS": "gw-key-1"})
    agents = {"m": fallback(sim)}
    async with gateway(agents, keys=keys) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=REQUEST) as r:
            assert r.status == 401
            assert (await r.json())["error"]["type"] == "authentication_error"
        bad = {"Authorization": "Bearer gw-key-2"}
        async with http.post(url + CHAT, json=REQUEST, headers=bad) as r:
            assert r.status == 401
        async with http.get(url + "/v1/models") as r:
            assert r.status == 401
        async with http.get(url + "/healthz") as r:
            assert r.status == 200  # probes stay open for load balancers
        good = {"Authorization": "Bearer gw-key-1"}
        async with http.post(url + CHAT, json=REQUEST, headers=good) as r:
            assert r.status == 200
        async with http.post(
            url + "/v1/messages",
            json={**REQUEST, "max_tokens": 5},
            headers={"x-api-key": "gw-key-1"},
        ) as r:
            text = await r.text()
            assert r.status == 200
    assert UPSTREAM_KEY not in text
    upstream = sim.requests("anthropic")
    assert upstream
    for sent in upstream:
        assert "gw-key-1" not in repr(sent["headers"])
        assert sent["headers"]["x-api-key"] == UPSTREAM_KEY


async def test_an_open_gateway_on_loopback_needs_no_key() -> None:
    async with (
        gateway({"m": FallbackAgent([Recorder()])}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + CHAT, json=REQUEST) as r,
    ):
        assert r.status == 200


def _args(chain: Path, host: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve_command.add_arguments(parser)
    return parser.parse_args([str(chain), "--host", host, "--port", "0"])


def test_no_key_and_a_public_bind_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FAILOVER_GATEWAY_KEYS", raising=False)
    chain = write_chain(tmp_path, CHAIN)
    assert serve_command.run(_args(chain, "0.0.0.0")) == 2
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 with no gateway key" in err
    assert "FAILOVER_GATEWAY_KEYS" in err


def test_the_chain_file_names_a_hashed_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FAILOVER_GATEWAY_KEYS", raising=False)
    (tmp_path / "gateway.keys").write_text("not a digest\n")
    chain = write_chain(tmp_path, CHAIN + "gateway:\n  keys_file: gateway.keys\n")
    # The file is read (relative to the chain file): its bad line stops the start.
    assert serve_command.run(_args(chain, "0.0.0.0")) == 2
    assert "gateway.keys:1: expected 'sha256:'" in capsys.readouterr().err
    chain.write_text(chain.read_text().replace("keys_file", "key_file"))
    assert serve_command.run(_args(chain, "127.0.0.1")) == 2
    assert "gateway.key_file" in capsys.readouterr().err


def test_hash_key_prints_a_key_file_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("team-key-1\n"))
    parser = argparse.ArgumentParser()
    serve_command.add_arguments(parser)
    assert serve_command.run(parser.parse_args(["--hash-key"])) == 0
    line = capsys.readouterr().out.strip()
    assert line == hash_key("team-key-1") and "team-key-1" not in line
    assert GatewayKeys.load({}, None).allows("team-key-1") is False


def test_serve_is_a_failover_command() -> None:
    from orchestrator.cli.plugins import load_commands

    commands, problems = load_commands()
    assert "serve" in commands and not problems
    assert "OpenAI- and Anthropic-compatible" in commands["serve"].help
