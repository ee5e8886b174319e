"""Where the health tests find a Redis server: a fresh machine needs only the dev extra."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import pytest


class _Server(Protocol):
    binary: str
    port: int


def _ping(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(64)


def test_without_a_system_redis_the_dev_extra_server_runs(
    monkeypatch: pytest.MonkeyPatch, redis_server_factory: Callable[[], _Server]
) -> None:
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    monkeypatch.setattr(shutil, "which", lambda *args, **kwargs: None)  # no PATH, no /usr/bin
    server = redis_server_factory()
    assert Path(server.binary).name == "valkey-server"
    assert _ping(server.port) == b"+PONG\r\n"


def test_redis_server_variable_comes_first(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_server_factory: Callable[[], _Server],
) -> None:
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    found = redis_server_factory().binary
    mine = tmp_path / "my-redis"
    os.symlink(found, mine)
    monkeypatch.setenv("REDIS_SERVER", str(mine))
    server = redis_server_factory()
    assert server.binary == str(mine)
    assert _ping(server.port) == b"+PONG\r\n"
