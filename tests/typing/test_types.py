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


@pytest.fixture(scope="module")
def mypy_output() -> str:
    """One ``mypy --strict`` run over both files (each run type-checks the whole package
    again, so two runs cost twice). Incremental, sharing the project's ``.mypy_cache``
    with ``make typecheck``: mypy re-checks whatever changed, so the cache costs no
    precision, and after ``make typecheck`` the run takes a fraction of a second."""
    if shutil.which("mypy", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mypy is not installed: pip install -e '.[dev]' (make .venv/.installed)")
    files = [str(HERE / "check_types.py"), str(HERE / "wrong_types.py")]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # 0: no error at all; 1: type errors found (expected, in wrong_types.py); else a crash.
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout


def _error_lines(output: str, name: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(rf"{name}\.py:(\d+): error", output)}


def test_typed_usage_passes_mypy_strict(mypy_output: str) -> None:
    assert _error_lines(mypy_output, "check_types") == set(), mypy_output
    assert "check_types.py" not in mypy_output, mypy_output  # nor any other complaint


def test_literal_typos_are_type_errors(mypy_output: str) -> None:
    path = HERE / "wrong_types.py"
    expected = {
        i + 1
        for i, line in enumerate(path.read_text().splitlines())
        if re.search(r"# error: \w+$", line)
    }
    assert expected and _error_lines(mypy_output, "wrong_types") == expected, mypy_output
    assert "checked 2 source files" in mypy_output, mypy_output
