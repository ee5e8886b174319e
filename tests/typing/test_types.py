"""The public API's types, checked by ``mypy --strict`` on files written as a user would.

``check_types.py`` must pass; each line of ``wrong_types.py`` marked ``# error`` must
fail (a typo in ``retry_strategy``, ``jitter`` or ``mid_stream`` is a type error).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _mypy(*files: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("mypy", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mypy is not installed: pip install -e '.[dev]' (make .venv/.installed)")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_typed_usage_passes_mypy_strict() -> None:
    done = _mypy(HERE / "check_types.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_literal_typos_are_type_errors() -> None:
    path = HERE / "wrong_types.py"
    expected = {
        i + 1
        for i, line in enumerate(path.read_text().splitlines())
        if re.search(r"# error: \w+$", line)
    }
    done = _mypy(path)
    found = {int(m.group(1)) for m in re.finditer(r"wrong_types\.py:(\d+): error", done.stdout)}
    assert expected and found == expected, done.stdout
