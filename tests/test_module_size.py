"""Modules stay under 400 lines (issue 17 item 23): split by concept before one grows past it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 400
# The taxonomy is read in one place: its drawn tree (which docs/errors-and-retries.md must
# copy) and one class per kind, each with the docstring that says what it means, are most of
# its lines; its run-level failures cannot move out without a circular import.
KNOWN_OVER = frozenset({"orchestrator/errors.py"})
MODULES = sorted(
    path.relative_to(ROOT).as_posix()
    for package in ("orchestrator", "providers")
    for path in (ROOT / package).rglob("*.py")
)


@pytest.mark.parametrize("module", [m for m in MODULES if m not in KNOWN_OVER])
def test_module_is_under_the_limit(module: str) -> None:
    lines = len((ROOT / module).read_text(encoding="utf-8").splitlines())
    assert lines <= LIMIT, f"{module} is {lines} lines (limit {LIMIT}): move a concept out"
