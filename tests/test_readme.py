"""Every snippet of README.md (and docs/*.md) runs as written, against the simulated server.

What runs, each in a fresh interpreter (``tests/readme_runner.py``), in a
temporary directory:

- every ```python block, as a script; top-level ``await`` is allowed (it then
  runs in one event loop, as in ``python -m asyncio``); a block defining
  ``test_*`` functions is a test module, run with pytest (all must pass;
  ``asyncio_mode=auto`` when pytest-asyncio is installed);
- every ``failover run`` / ``failover check`` line of a ```sh block that names a
  file the docs define (below), with the rest of the line as its arguments;
  ``X | failover ...`` gets a few lines of text on stdin.

Files: a ```python, ```yaml or ```toml block whose first line is ``# NAME.ext``,
and any block right below ``<!-- file: NAME -->``, is written as NAME into the
directory every snippet runs in (so a chain file, the hook module it names or a
fault script can be used by other snippets); a file block is not run itself.

The substitution, the only difference from a user's run (tests/readme_runner.py
has the details): a ``SimulatedServer`` runs on loopback; ``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY`` and ``GEMINI_API_KEY`` hold a fake key (real keys are
dropped); ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and ``GEMINI_BASE_URL``
hold the simulator's base URLs and ``FAILOVER_SIM_URL`` its root;
``OpenAIChat``, ``AnthropicMessages`` and ``GeminiGenerate`` built without
``base_url=`` get the simulator's, and an ``HTTPFallback`` URL that is not on
loopback goes to its ``http`` route. So write a snippet as a user would
(``OpenAIChat("gpt-5.4-mini")``, the key from the environment) and it runs here
unchanged. A snippet with its own ``SimulatedServer`` keeps its URLs.

Markers: HTML comments right above a block (blank lines between are fine),
invisible on GitHub:

- ``<!-- not-run: REASON -->``: not run (needs a real key, an external service...).
  Every python block is run, a file, or marked: an unmarked block that cannot
  run fails here.
- ``<!-- sim: {"openai": [{"status": 503}]} -->``: the simulator's fault script for
  this block, in the ``failover simulate --script`` format (docs/fault-scripts.md):
  how a snippet shows a failover.
- ``<!-- expect: TEXT -->`` (repeatable): TEXT appears in what the block printed
  (stdout and stderr). On a sh block it applies to each of its ``failover`` lines.
- ``<!-- exit: N -->``: a sh block's ``failover`` lines exit with N (default 0).
- ``<!-- file: NAME -->``: the block is the file NAME (see Files).

A block passes when it ran to its end (``failover`` lines: with the expected
exit code), printed every ``expect:`` text, and printed something or sent the
simulator a request. A block known to fail until another branch lands is listed
in ``KNOWN_FAILING`` by the heading it sits under: the one place to remove it
from once it passes (the test then fails, saying so).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from providers.simulated.faults import _FACTORIES
from providers.simulated.script import parse_script

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# heading -> reason, for blocks that wait on another branch.
KNOWN_FAILING: dict[str, str] = {}
RUN_TIMEOUT = 120  # seconds per block: generous for a loaded machine; a block takes about 1 s
PIPED_STDIN = "def area(r):\n-    return 3.14 * r * r\n+    return 3.14 * r * 2\n"

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*([\w-]+)\s*:\s*(.*?)\s*-->\s*$")
_FILE_LINE = re.compile(r"^#\s*([\w.-]+\.(?:py|ya?ml|toml))\s*$")
_MARKER_KEYS = frozenset({"not-run", "sim", "expect", "exit", "file"})


@dataclass
class Block:
    """One fenced block of a page, the heading it sits under and the markers above it."""

    page: str
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
        return f"{self.page}:{self.line}"

    def filename(self) -> str | None:
        """The file this block is (``<!-- file: NAME -->`` or a ``# NAME.ext`` first line)."""
        named = self.marker("file")
        if named:
            return named
        first = self.text.splitlines()[0] if self.text else ""
        found = _FILE_LINE.match(first) if self.lang in {"python", "yaml", "toml"} else None
        return found.group(1) if found else None


def parse_page(page: str, text: str) -> list[Block]:
    """Every fenced block of a Markdown page, with its heading and markers."""
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
            raise ValueError(f"{page}:{i + 1}: a ``` block is never closed")
        body = "\n".join(lines[i + 1 : end]) + "\n"
        block = Block(page, fence.group(1), i + 1, heading, body)
        block.markers = _markers_above(page, lines, i)
        blocks.append(block)
        i = end + 1
    return blocks


def _markers_above(page: str, lines: list[str], fence: int) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    j = fence - 1
    while j >= 0 and (not lines[j].strip() or _MARKER.match(lines[j])):
        marker = _MARKER.match(lines[j])
        if marker:
            key = marker.group(1)
            if key not in _MARKER_KEYS:
                raise ValueError(
                    f"{page}:{j + 1}: unknown marker {key!r}; one of {sorted(_MARKER_KEYS)}"
                )
            found.append((key, marker.group(2)))
        j -= 1
    return found[::-1]


def failover_lines(block: Block, files: set[str]) -> list[tuple[list[str], bool]]:
    """(argv after ``failover``, whether stdin is piped) for each line to run."""
    out = []
    for raw in block.text.splitlines():
        if not raw.lstrip().startswith("failover") and "| failover" not in raw:
            continue  # other commands (curl, export...) are the reader's, not run here
        words = shlex.split(raw, comments=True)
        piped = "|" in words
        if piped:
            words = words[words.index("|") + 1 :]
        command = words[:2] in (["failover", "run"], ["failover", "check"])
        if command and len(words) > 2 and words[2] in files:
            out.append((words[1:], piped))
    return out


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
        return self.block.where + (f"-{self.argv[0]}" if self.argv else "")


def collect(blocks: list[Block], files: set[str]) -> list[Case]:
    """The cases to run: python blocks and the sh blocks' ``failover`` lines."""
    out: list[Case] = []
    for block in blocks:
        if block.marker("not-run") is not None or block.filename():
            continue  # not run, or a file other snippets use
        if block.lang == "python":
            out.append(Case(block, "python", code=block.text))
        elif block.lang in {"sh", "bash", "console"}:
            for argv, piped in failover_lines(block, files):
                stdin = PIPED_STDIN if piped else None
                out.append(Case(block, "failover", argv=argv, stdin=stdin))
    return out


BLOCKS = [b for page in DOCS for b in parse_page(page.name, page.read_text(encoding="utf-8"))]
FILES = {name: b.text for b in BLOCKS if (name := b.filename())}
CASES = collect(BLOCKS, set(FILES))


def run_case(case: Case, directory: Path) -> tuple[dict[str, object], str, str]:
    """Run ``case`` in a fresh interpreter in ``directory``; (report, stdout, stderr)."""
    for name, text in FILES.items():
        (directory / name).write_text(text, encoding="utf-8")
    report = directory / "_report.json"
    script = case.block.marker("sim")
    job = {
        "kind": case.kind,
        "code": case.code,
        "argv": case.argv,
        "where": case.block.where,
        "script": json.loads(script) if script else None,
        "report": str(report),
    }
    (directory / "_job.json").write_text(json.dumps(job), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "tests.readme_runner", str(directory / "_job.json")],
        cwd=directory,
        env=env,
        input=case.stdin,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    outcome = json.loads(report.read_text()) if report.exists() else {"completed": False}
    return outcome, done.stdout, done.stderr


def problems_of(case: Case, outcome: dict[str, object], output: str) -> list[str]:
    """What is wrong with a finished run (empty when it passed)."""
    problems = []
    wanted_exit = int(case.block.marker("exit") or 0)
    if not outcome.get("completed"):
        problems.append("did not run to its end")
    elif case.kind == "failover" and outcome.get("exit") != wanted_exit:
        problems.append(f"exit {outcome.get('exit')}, expected {wanted_exit}")
    problems += [f"output lacks {text!r}" for text in case.block.expects() if text not in output]
    if not output.strip() and not outcome.get("requests"):
        problems.append("printed nothing and sent no request: nothing shows it ran")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_snippet_runs(case: Case, tmp_path: Path) -> None:
    outcome, stdout, stderr = run_case(case, tmp_path)
    problems = problems_of(case, outcome, stdout + stderr)
    reason = KNOWN_FAILING.get(case.block.heading)
    if reason is not None:
        if problems:
            pytest.xfail(f"{reason}: {problems[0]}")
        pytest.fail(f"{case.id} passes now: remove {case.block.heading!r} from KNOWN_FAILING")
    assert not problems, f"{case.id}: {'; '.join(problems)}\nstdout:\n{stdout}\nstderr:\n{stderr}"


def test_every_block_is_run_a_file_or_marked() -> None:
    """Each python block is run, a file or marked not-run with a reason (and still compiles);
    every chain file is run; every ``sim:`` script is valid."""
    run = {c.block.where for c in CASES}
    kinds: dict[str, list[str]] = {"run": [], "file": [], "not-run": []}
    for b in (b for b in BLOCKS if b.lang == "python"):
        reason = b.marker("not-run")
        kind = "not-run" if reason is not None else "file" if b.filename() else "run"
        kinds[kind].append(b.where)
        assert reason is None or (reason and not b.filename()), f"{b.where}: not-run needs a reason"
        assert kind != "run" or b.where in run, f"{b.where}: not collected"
        compile(b.text, b.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    assert len(kinds["run"]) >= 10, f"only {kinds['run']} run: does the parser find blocks?"
    names = [b.filename() for b in BLOCKS if b.filename()]
    assert len(names) == len(set(names)), f"two blocks are the same file: {sorted(names)}"
    for b in BLOCKS:
        if b.lang == "yaml" and b.filename():
            used = any(b.filename() in c.argv or b.filename() in c.code for c in CASES)
            assert used, f"{b.where}: chain file {b.filename()} is never run"
        script = b.marker("sim")
        if script is not None:
            parse_script(json.loads(script))  # a bad script fails here, naming the fault


def test_first_snippet_shows_run_sync_and_await() -> None:
    first = next(b for b in BLOCKS if b.page == "README.md" and b.lang == "python")
    assert "agent.run_sync(" in first.text and "await agent.run(" in first.text


def test_markers_files_and_failover_lines_are_found() -> None:
    page = (
        "# Top\n## Section\n<!-- sim: {} -->\n\n<!-- expect: hi -->\n```python\nprint('hi')\n```\n"
        "```yaml\n# c.yaml\na: 1\n```\n"
        "```sh\nfailover run c.yaml --agent a x  # answer\ncat f | failover check c.yaml\n"
        "failover simulate --port 1\nfailover run other.yaml\n```\n"
    )
    code, chain, sh = parse_page("p.md", page)
    assert (code.heading, code.line, code.markers) == (
        "Section",
        6,
        [("sim", "{}"), ("expect", "hi")],
    )
    assert chain.filename() == "c.yaml" and code.filename() is None
    assert failover_lines(sh, {"c.yaml"}) == [
        (["run", "c.yaml", "--agent", "a", "x"], False),
        (["check", "c.yaml"], True),
    ]
    assert [c.kind for c in collect([code, chain, sh], {"c.yaml"})] == [
        "python",
        "failover",
        "failover",
    ]
    with pytest.raises(ValueError, match=r"p\.md:1: unknown marker 'skip'"):
        parse_page("p.md", "<!-- skip: x -->\n```python\n```\n")
    with pytest.raises(ValueError, match="never closed"):
        parse_page("p.md", "```python\nx = 1\n")


def test_a_block_that_prints_nothing_fails() -> None:
    block = Block("p.md", "python", 1, "", "x = 1\n", [("expect", "3 attempts")])
    case = Case(block, "python", code=block.text)
    assert problems_of(case, {"completed": True, "requests": 0}, "") == [
        "output lacks '3 attempts'",
        "printed nothing and sent no request: nothing shows it ran",
    ]


def test_every_fault_and_argument_is_documented() -> None:
    """docs/fault-scripts.md has a row per Fault factory naming each of its arguments."""
    text = (ROOT / "docs" / "fault-scripts.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", text, re.M)}
    for name, factory in _FACTORIES.items():
        assert name in rows, f"docs/fault-scripts.md: no row for fault {name!r}"
        for param in inspect.signature(factory).parameters:
            assert f"`{param}`" in rows[name], f"fault {name!r}: argument {param!r} not documented"


def _deprecated_models() -> dict[str, str]:
    """Model names the installed vendor SDKs call deprecated: name -> what the SDK says."""
    out: dict[str, str] = {}
    anthropic = pytest.importorskip("anthropic._data", reason="pip install anthropic (dev extra)")
    out.update(
        {m: f"anthropic SDK: end of life {d}" for m, d in anthropic.DEPRECATED_MODELS.items()}
    )
    chat_model = pytest.importorskip("openai.types.shared.chat_model")
    source = Path(chat_model.__file__).read_text(encoding="utf-8")
    # the SDK lists them in the docstring after ChatModel: 'Deprecated values: - "gpt-4o", ...'
    _, _, tail = source.partition("Deprecated values:")
    out.update({m: "openai SDK: deprecated" for m in re.findall(r'"([\w.-]+)"', tail)})
    return out


# a model name in code: quoted, in backticks, or a chain file's model key
_MODEL = re.compile(r"""(?:["'`]|model\s*[:=]\s*)((?:claude|gpt|gemini|o\d)-[\w.-]*\w)""")


def test_model_names_are_current() -> None:
    deprecated = _deprecated_models()
    examples = sorted(p for p in (ROOT / "examples").iterdir() if p.is_file())
    pages = [*DOCS, *examples, ROOT / "providers" / "demo.py"]  # what a new user reads and runs
    found = []
    for page in pages:
        for name in _MODEL.findall(page.read_text("utf-8")):
            if name in deprecated:
                found.append(f"{page.relative_to(ROOT)}: {name} ({deprecated[name]})")
    assert not found, "\n".join(found)
