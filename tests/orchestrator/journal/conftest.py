"""A throwaway Postgres cluster for the journal's Postgres tests, or a skip saying how to get one.

The cluster lives in a temporary directory, on a free loopback port, with fsync off
(it is thrown away). Postgres refuses to run as root: as root (CI) it runs as ``nobody``
through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

HOW = (
    "Postgres server binaries not found (initdb, pg_ctl): apt-get install postgresql "
    "(.ci/run does), or put them on PATH"
)


def _bin_dir() -> str | None:
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    return next((d for d in dirs if os.path.exists(os.path.join(d, "initdb"))), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """``postgresql://postgres@127.0.0.1:PORT/postgres`` of a cluster started for the session."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip(HOW)
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: Postgres cannot run as root")
        as_user = ["runuser", "-u", "nobody", "--"]
    top = tempfile.mkdtemp(prefix="failover-pg-")
    os.chmod(top, 0o755)
    data = os.path.join(top, "data")
    os.mkdir(data)
    if as_user:
        shutil.chown(data, "nobody")
    port = _free_port()
    run = {"check": True, "capture_output": True, "timeout": 60, "cwd": top}
    try:
        subprocess.run(
            [
                *as_user,
                f"{bin_dir}/initdb",
                "-D",
                data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            **run,  # type: ignore[arg-type]
        )
        options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            [
                *as_user,
                f"{bin_dir}/pg_ctl",
                "-D",
                data,
                "-o",
                options,
                "-l",
                os.path.join(data, "log"),
                "-w",
                "start",
            ],
            **run,  # type: ignore[arg-type]
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(top, ignore_errors=True)
        pytest.skip(f"could not start Postgres: {exc.stderr.decode(errors='replace')[:300]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
            cwd=top,
        )
        shutil.rmtree(top, ignore_errors=True)
