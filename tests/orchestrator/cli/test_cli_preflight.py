"""``failover check`` runs every check ``run`` runs before sending anything."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.conftest import hooks_chain

HOOKS = """
calls = []

def answer(request):
    calls.append(request.prompt)
    return "answer: " + request.prompt
"""


def _chain(tmp_path: Path, summary_prompt: str) -> tuple[Path, str]:
    return hooks_chain(
        tmp_path,
        "preflight",
        HOOKS,
        f"""
            providers:
              fn: {{type: function, path: "HOOKS:answer"}}
            agents:
              review: {{providers: [fn]}}
            workflows:
              release:
                phases:
                  - {{name: Review, steps: [{{name: review, agent: review, prompt: "Review {{input}}"}}]}}
                  - {{name: Summary, steps: [{{name: summary, agent: fn, prompt: "{summary_prompt}"}}]}}
            """,
    )


@pytest.fixture
def typo(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    path, mod = _chain(tmp_path, "Sum {reviw.text}")
    yield path, mod
    sys.modules.pop(mod, None)


def test_check_refuses_a_template_naming_an_unknown_step_as_run_does(
    typo: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, mod = typo
    assert main(["run", str(path), "--workflow", "release", "the patch"]) == 2
    run_err = capsys.readouterr().err
    assert "{reviw}" in run_err and "neither an input nor an earlier step" in run_err
    assert sys.modules[mod].calls == []  # refused before anything was sent

    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == run_err
    assert "ok:" not in captured.out


def test_check_accepts_inputs_a_run_would_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, mod = _chain(tmp_path, "Sum {review.text} for {audience}")
    try:
        assert main(["check", str(path)]) == 0
        out = capsys.readouterr().out
        assert "  workflow release: 2 phase(s), 2 step(s); inputs: audience, input" in out
        # run without the input refuses before sending, with the same rule
        assert main(["run", str(path), "--workflow", "release", "x"]) == 2
        assert "{audience}" in capsys.readouterr().err
        assert sys.modules[mod].calls == []
        code = main(["run", str(path), "--workflow", "release", "x", "--input", "audience=ops"])
        assert code == 0
        assert "Sum answer: Review x for ops" in capsys.readouterr().out
    finally:
        sys.modules.pop(mod, None)
