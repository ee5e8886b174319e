"""Shared helpers for the CLI-agent tests: stand-in paths, process checks, real-CLI lookup."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

BIN = Path(__file__).resolve().parent / "bin"
STANDIN = str(BIN / "standin.py")
FAKE_AGENT = str(BIN / "fake_agent.py")
REPO = Path(__file__).resolve().parents[3]
CLI_PREFIX = REPO / ".cli-agents"


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


async def wait_dead(pid: int, within: float = 5.0) -> bool:
    """Poll until ``pid`` is gone (or a zombie of someone else); False after ``within`` s."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return not alive(pid)


async def wait_file(path: Path, within: float = 10.0) -> str:
    """The content of ``path`` once it exists."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if path.exists():
            return path.read_text()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was not written within {within}s")


def reaped(pid: int) -> bool:
    """True when ``pid`` is not an unreaped child of this process (no zombie left by us)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def find_cli(name: str) -> str | None:
    """The real ``name`` CLI: the repo's .cli-agents install first, then PATH."""
    local = CLI_PREFIX / "node_modules" / ".bin" / name
    if local.exists() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


def secure_dir(name: str) -> Path:
    """A 0700 directory whose parents are not world-writable (gemini checks; /tmp is not).

    Under the home directory, not the checkout: CI clones into folders whose
    parents may be world-writable, and gemini then ignores the settings file.
    """
    base = Path.home() / ".cache" / "failover-tests"
    path = base / "test-state" / name
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
