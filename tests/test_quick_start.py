"""The Quick start (docs/getting-started.md) runs as written, with a stdlib logger (issue 10).

Its first version called ``log.warning("fallback", frm=...)``: with a stdlib logger
that is a ``TypeError``, which aborted the chain with ``HookError`` after the
primary's retries, never trying the backup.
"""

from __future__ import annotations

import logging

import pytest

from tests.doc_pages import section_code


def test_quick_start_runs_as_written(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="myapp"):
        block = section_code("Quick start")
        exec(compile(block.text, block.where, "exec"), {"__name__": "quick_start"})
    out = capsys.readouterr().out
    assert out.startswith("claude 4 Claude reviewed: Review this pull request")
    assert [r.getMessage() for r in caplog.records if r.name == "myapp"] == [
        "fallback codex -> claude: ConnectionError('codex is down')"
    ]
