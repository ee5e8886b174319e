"""The README's Quick start runs as written, with a stdlib logger (issue 10).

Its first version called ``log.warning("fallback", frm=...)``: with a stdlib logger
that is a ``TypeError``, which aborted the chain with ``HookError`` after the
primary's retries, never trying the backup.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start() -> str:
    text = README.read_text()
    section = text.split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "README: no python block under 'Quick start'"
    return match.group(1)


def test_quick_start_runs_as_written(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="myapp"):
        exec(compile(quick_start(), str(README), "exec"), {"__name__": "quick_start"})
    out = capsys.readouterr().out
    assert out.startswith("claude 4 Claude reviewed: Review this pull request")
    assert [r.getMessage() for r in caplog.records if r.name == "myapp"] == [
        "fallback codex -> claude: ConnectionError('codex is down')"
    ]
