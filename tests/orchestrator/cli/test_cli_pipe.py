"""``failover run ... | head``: a closed stdout ends the command quietly, exit 141."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FAILOVER = Path(sys.executable).parent / "failover"

pytestmark = pytest.mark.skipif(
    not FAILOVER.exists(), reason="console script not installed: run .venv/bin/pip install -e ."
)


def _chain(tmp_path: Path, size: int) -> Path:
    (tmp_path / "pipemod.py").write_text(f"def big(request):\n    return 'x' * {size}\n")
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n  fn: {type: function, path: 'pipemod:big'}\n"
        "agents:\n  a:\n    providers: [fn]\n"
    )
    return path


def _run_into_closed_pipe(path: Path, args: list[str], read: int) -> tuple[int, bytes]:
    """Run with stdout on a real pipe whose reader takes ``read`` bytes, then closes it."""
    reader, writer = os.pipe()
    proc = subprocess.Popen(
        [str(FAILOVER), "run", str(path), *args, "hi"],
        stdout=writer,
        stderr=subprocess.PIPE,
        cwd=path.parent,
    )
    os.close(writer)
    try:
        if read:
            os.read(reader, read)
    finally:
        os.close(reader)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize("args", [["--json"], [], ["--stream", "-v"]])
def test_a_closed_stdout_ends_quietly_with_141(tmp_path: Path, args: list[str]) -> None:
    small = _chain(tmp_path, 10)
    for _ in range(3):  # the failure was 1 run in 5: repeat
        code, err = _run_into_closed_pipe(small, args, read=0)
        assert (code, _quiet(err, args)) == (141, b"")
    big = _chain(tmp_path, 300_000)  # more than a pipe holds: the write itself fails
    for _ in range(2):
        code, err = _run_into_closed_pipe(big, args, read=10)
        assert (code, _quiet(err, args)) == (141, b"")


def _quiet(err: bytes, args: list[str]) -> bytes:
    """stderr without the ``-v`` progress lines (each starts with its time stamp)."""
    if "-v" not in args:
        return err
    return b"".join(line for line in err.splitlines(keepends=True) if not line.startswith(b"[ "))


def test_a_closed_stderr_does_not_stop_the_run(tmp_path: Path) -> None:
    path = _chain(tmp_path, 10)
    reader, writer = os.pipe()
    os.close(reader)
    done = subprocess.run(
        [str(FAILOVER), "run", str(path), "-v", "hi"],
        stdout=subprocess.PIPE,
        stderr=writer,
        cwd=path.parent,
        timeout=60,
    )
    os.close(writer)
    assert (done.returncode, done.stdout) == (0, b"x" * 10 + b"\n")
