"""Fixtures for the health tests: a real ``redis-server`` on a free loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

REDIS_BINARY = os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")


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


def _binary() -> str:
    path = shutil.which(REDIS_BINARY) or shutil.which("redis-server")
    if path is None:
        message = (
            f"redis-server not found at {REDIS_BINARY} or on PATH: install it with "
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
