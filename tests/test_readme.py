"""Every README snippet runs as written, against the simulated server over loopback.

What runs (each in a fresh interpreter, ``tests/readme_runner.py``):

- every ```python block, as a script (top-level ``await`` is allowed: it runs in
  one event loop, as in ``python -m asyncio``);
- every ``failover run`` / ``failover check`` line of a ```sh block that names a
  file the README defines (below), with the rest of the line as arguments;
  ``X | failover ...`` gets a line of text on stdin.

Files: a ```yaml or ```toml block whose first line is ``# NAME.yaml`` (or
``.toml``), and any block preceded by ``<!-- file: NAME -->``, is written as
NAME into the directory every snippet runs in, so snippets can use it.

The substitution (the only difference from a user's run; details in
tests/readme_runner.py): a ``SimulatedServer`` runs on loopback; the
``*_API_KEY`` variables hold a fake key; ``OpenAIChat``, ``AnthropicMessages``
and ``GeminiGenerate`` built without ``base_url=`` get the simulator's, and an
``HTTPFallback`` URL that is not on loopback goes to its ``http`` route. So
write snippets as a user would (``OpenAIChat("gpt-5.4-mini")``, key from the
environment) and they run here unchanged.

Markers: HTML comments right above a block (blank lines allowed), invisible on
GitHub:

- ``<!-- not-run: REASON -->``: not run (needs a real key, an external service...).
  Counted: every python block is either run or marked, and the test fails on a
  block that cannot run unmarked.
- ``<!-- sim: {"openai": [{"status": 503}]} -->``: the simulator's fault script for
  this block, in the ``failover simulate --script`` format (to show a failover).
- ``<!-- expect: TEXT -->`` (repeatable): TEXT must appear in what the block
  printed (stdout and stderr).
  For a sh block, it applies to each ``failover`` line of it.
- ``<!-- exit: N -->``: a sh block's ``failover`` lines exit with N (default 0).

A block passes when it ran to its end (exit 0 for ``failover`` lines unless
``exit:`` says otherwise), printed every ``expect:`` text, and either printed
something or sent a request to the simulator. A block known to fail until
another branch lands is listed in ``KNOWN_FAILING`` (by the heading it sits
under), the one place to remove it from once fixed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# heading -> reason; a strict xfail, so the test says when the entry can go.
KNOWN_FAILING: dict[str, str] = {
    "Quick start": "fixed by errs branch",
    "Retry policy per provider": "fixed by errs branch",
}
RUN_TIMEOUT = 120  # seconds per block; a loaded 2-core machine is slow, a block is not

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*([\w-]+)\s*:\s*(.*?)\s*-->\s*$")
_FILE_LINE = re.compile(r"^#\s*([\w.-]+\.(?:py|ya?ml|toml))\s*$")
_MARKER_KEYS = {"not-run", "sim", "expect", "exit", "file"}


@dataclass
class Block:
    """One fenced block of the README with the markers above it."""

    lang: str
    line: int  # 1-based line of the opening fence
    heading: str
    text: str
    markers: list[tuple[str, str]] = field(default_factory=list)

    def marker(self, key: str) -> str | None:
        return next((v for k, v in self.markers if k == key), None)

    def expects(self) -> list[str]:
        return [v for k, v in self.markers if k == "expect"]

    @property
    def where(self) -> str:
        return f"README.md:{self.line}"

    def filename(self) -> str | None:
        named = self.marker("file")
        if named:
            return named
        first = self.text.splitlines()[0] if self.text else ""
        found = _FILE_LINE.match(first) if self.lang in {"python", "yaml", "toml"} else None
        return found.group(1) if found else None


def parse_readme(text: str) -> list[Block]:
    """Every fenced block, its heading and the marker comments right above it."""
    blocks: list[Block] = []
    lines = text.splitlines()
    heading, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        fence = _FENCE.match(line)
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise AssertionError(f"README.md:{i + 1}: a ``` block is never closed")
        block = Block(fence.group(1), i + 1, heading, "\n".join(lines[i + 1 : end]) + "\n")
        block.markers = _markers_above(lines, i)
        blocks.append(block)
        i = end + 1
    return blocks


def _markers_above(lines: list[str], fence: int) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    j = fence - 1
    while j >= 0 and (not lines[j].strip() or _MARKER.match(lines[j])):
        marker = _MARKER.match(lines[j])
        if marker:
            key = marker.group(1)
            if key not in _MARKER_KEYS:
                raise AssertionError(
                    f"README.md:{j + 1}: unknown marker {key!r}; one of {sorted(_MARKER_KEYS)}"
                )
            found.append((key, marker.group(2)))
        j -= 1
    return found[::-1]


def failover_lines(block: Block, files: set[str]) -> list[tuple[list[str], bool]]:
    """(argv after ``failover``, whether stdin is piped) for each line to run."""
    out = []
    for raw in block.text.splitlines():
        words = shlex.split(raw, comments=True)
        piped = "|" in words
        if piped:
            words = words[words.index("|") + 1 :]
        if len(words) > 2 and words[0] == "failover" and words[1] in {"run", "check"}:
            if words[2] in files:
                out.append((words[1:], piped))
    return out


BLOCKS = parse_readme(README.read_text(encoding="utf-8"))
FILES = {name: b.text for b in BLOCKS if (name := b.filename())}


@dataclass
class Case:
    """One thing to run: a python block, or one ``failover`` line of a sh block."""

    block: Block
    kind: str
    code: str = ""
    argv: list[str] = field(default_factory=list)
    stdin: str | None = None

    @property
    def id(self) -> str:
        suffix = f"-{self.argv[0]}" if self.argv else ""
        return f"{self.block.where}{suffix}"


def cases() -> list[Case]:
    out: list[Case] = []
    for block in BLOCKS:
        if block.marker("not-run") is not None or block.filename():
            continue  # not run, or a file other snippets use
        if block.lang == "python":
            out.append(Case(block, "python", code=block.text))
        elif block.lang in {"sh", "bash", "console"}:
            for argv, piped in failover_lines(block, set(FILES)):
                stdin = "def f():\n-    return 1\n+    return 2\n" if piped else None
                out.append(Case(block, "failover", argv=argv, stdin=stdin))
    return out


CASES = cases()


def run_case(case: Case, tmp_path: Path) -> tuple[dict[str, object], str, str]:
    """Run ``case`` in a fresh interpreter; (report, stdout, stderr)."""
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    report = tmp_path / "_report.json"
    script = case.block.marker("sim")
    job = {
        "kind": case.kind,
        "code": case.code,
        "argv": case.argv,
        "where": case.block.where,
        "script": json.loads(script) if script else None,
        "report": str(report),
    }
    (tmp_path / "_job.json").write_text(json.dumps(job), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "tests.readme_runner", str(tmp_path / "_job.json")],
        cwd=tmp_path,
        env=_env(),
        input=case.stdin,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    outcome = json.loads(report.read_text()) if report.exists() else {"completed": False}
    return outcome, done.stdout, done.stderr


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_readme_snippet_runs(case: Case, tmp_path: Path) -> None:
    reason = KNOWN_FAILING.get(case.block.heading)
    outcome, stdout, stderr = run_case(case, tmp_path)
    problems = _problems(case, outcome, stdout, stderr)
    if reason is not None:
        if problems:
            pytest.xfail(f"{reason}: {problems[0]}")
        pytest.fail(f"{case.id} passes now: remove {case.block.heading!r} from KNOWN_FAILING")
    assert not problems, f"{case.id}: " + "; ".join(problems) + f"\nstdout:\n{stdout}\nstderr:\n{stderr}"


def _problems(case: Case, outcome: dict[str, object], stdout: str, stderr: str) -> list[str]:
    problems = []
    wanted_exit = int(case.block.marker("exit") or 0)
    if not outcome.get("completed"):
        problems.append("did not run to its end")
    elif case.kind == "failover" and outcome.get("exit") != wanted_exit:
        problems.append(f"exit {outcome.get('exit')}, expected {wanted_exit}")
    output = stdout + stderr
    problems += [f"output lacks {text!r}" for text in case.block.expects() if text not in output]
    if not output.strip() and not outcome.get("requests"):
        problems.append("printed nothing and sent no request: nothing shows it ran")
    return problems
