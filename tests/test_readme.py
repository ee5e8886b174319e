"""Every snippet of README.md and of every docs/**/*.md page runs as written, against the simulator.

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
import subprocess
import sys
from pathlib import Path

import pytest

from providers.simulator.script import FAULT_FACTORIES, parse_script
from tests.doc_pages import (
    ROOT,
    Block,
    Case,
    collect,
    failover_lines,
    files_of,
    load,
    page_name,
    pages,
    parse_page,
)

# heading -> reason, for blocks that wait on another branch.
KNOWN_FAILING: dict[str, str] = {}
RUN_TIMEOUT = 120  # seconds per block: generous for a loaded machine; a block takes about 1 s

BLOCKS = load()
FILES = files_of(BLOCKS)
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


def test_pages_are_the_readme_and_every_page_under_docs(tmp_path: Path) -> None:
    """Pages in subfolders of docs/ run too, named by their path (two index.md never collide)."""
    for name in ("README.md", "docs/index.md", "docs/guide/index.md", "docs/guide/deep/x.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# T\n```python\nprint(1)\n```\n", encoding="utf-8")
    (tmp_path / "docs" / "notes.txt").write_text("not a page", encoding="utf-8")
    found = pages(tmp_path)
    assert [page_name(p, tmp_path) for p in found] == [
        "README.md",
        "docs/guide/deep/x.md",
        "docs/guide/index.md",
        "docs/index.md",
    ]
    wheres = [b.where for b in load(found, tmp_path)]
    assert wheres == [
        "README.md:2",
        "docs/guide/deep/x.md:2",
        "docs/guide/index.md:2",
        "docs/index.md:2",
    ]


def test_every_page_of_the_site_is_run() -> None:
    """Every docs page with a python block has cases; none is left out of the collection."""
    run_pages = {c.block.page for c in CASES}
    for path in pages():
        name = page_name(path)
        runnable = [b for b in BLOCKS if b.page == name and b.lang == "python"]
        runnable = [b for b in runnable if b.marker("not-run") is None and not b.filename()]
        assert not runnable or name in run_pages, f"{name}: its python blocks are not run"
    assert len(run_pages) >= 10, f"only {sorted(run_pages)} have cases"


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
    for name, factory in FAULT_FACTORIES.items():
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
    read = [*pages(), *examples, ROOT / "providers" / "demo.py"]  # what a new user reads and runs
    found = []
    for page in read:
        for name in _MODEL.findall(page.read_text("utf-8")):
            if name in deprecated:
                found.append(f"{page.relative_to(ROOT)}: {name} ({deprecated[name]})")
    assert not found, "\n".join(found)
