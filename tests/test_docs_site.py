"""The documentation site (mkdocs.yml, docs/) builds without a warning and keeps its promises.

``mkdocs build --strict`` fails on a broken link or anchor, a page missing from
the nav or a nav entry without a page (mkdocs.yml turns each into a warning).
The README stays a front door: short, linking to every page of the nav. The
pages that hold a list the code also holds (the error tree, the coding-agent
CLIs' chain-file keys) are compared with the code, so neither can drift.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

import orchestrator.errors
from providers.cli.spec import ClaudeCodeSpec, CodexSpec, CommandSpec, GeminiCLISpec
from tests.doc_pages import ROOT, load, section_code

DOCS = ROOT / "docs"
README_MAX_LINES = 80  # what it is, the two commands, the first call, where to read on
BUILD_TIMEOUT = 300  # seconds: about 2 s alone, far more on a loaded machine


def nav_pages(nav: list[Any]) -> list[str]:
    """The page files of a mkdocs ``nav`` (nested sections flattened), in order."""
    out: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += nav_pages(value) if isinstance(value, list) else [value]
    return out


def mkdocs_config() -> dict[str, Any]:
    # Material's config holds python tags (!!python/name:...) that safe_load refuses; ours
    # has none, and a plain safe_load keeps it so.
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return config


def test_the_site_builds_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner is not our warning
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    if "No module named mkdocs" in done.stderr:
        pytest.fail("mkdocs is not installed: pip install -e '.[dev]' (the dev extra has it)")
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert done.returncode == 0 and not warnings, done.stderr
    assert (tmp_path / "coding-agent-clis" / "index.html").exists()


def test_the_site_uses_no_plugin_that_needs_the_network() -> None:
    plugins = mkdocs_config().get("plugins", [])
    names = {p if isinstance(p, str) else next(iter(p)) for p in plugins}
    assert names <= {"search"}, f"plugins {sorted(names)}: only offline ones (search) are allowed"


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    in_nav = nav_pages(mkdocs_config()["nav"])
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(in_nav) == on_disk
    assert len(in_nav) == len(set(in_nav)), f"a page is twice in the nav: {in_nav}"


def unlinked_pages(text: str, prefix: str) -> list[str]:
    """The nav's pages (the home page aside) that ``text`` does not link as ``PREFIX/page.md``."""
    linked = set(re.findall(rf"\]\({prefix}([\w/.-]+\.md)(?:#[\w-]*)?\)", text))
    assert all((DOCS / page).exists() for page in linked), sorted(linked)
    return [p for p in nav_pages(mkdocs_config()["nav"]) if p != "index.md" and p not in linked]


def test_the_readme_is_a_front_door() -> None:
    """Short, with the two commands, the first call, and a link to every page of the nav."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md: {len(lines)} lines: move reference to docs/"
    assert "make demo" in text and "make test" in text
    assert section_code("First call").page == "README.md"
    assert not (missing := unlinked_pages(text, "docs/")), f"README.md links to no {missing}"


def test_the_home_page_links_every_page() -> None:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert not (missing := unlinked_pages(text, "")), f"docs/index.md links to no {missing}"


def test_make_test_duration_is_documented() -> None:
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    section = text.split("## How long `make test` takes", 1)
    assert len(section) == 2, "getting-started.md: no section on how long make test takes"
    assert re.search(r"\d+(\.\d+)? min", section[1].split("\n## ", 1)[0])


def _docstring_tree() -> str:
    doc = orchestrator.errors.__doc__ or ""
    start = doc.index("::\n\n") + 4
    return textwrap.dedent(doc[start : doc.index("\n\n", start)]).strip()


def test_the_error_page_draws_the_tree_the_module_does() -> None:
    blocks = [b for b in load() if b.heading == "The taxonomy" and b.lang == "text"]
    assert len(blocks) == 1, "docs/errors-and-retries.md: one text block under 'The taxonomy'"
    assert blocks[0].text.strip() == _docstring_tree(), (
        "copy orchestrator/errors/__init__.py's tree"
    )


@pytest.mark.parametrize("spec", [ClaudeCodeSpec, CodexSpec, GeminiCLISpec, CommandSpec])
def test_every_chain_file_key_of_a_cli_type_is_documented(spec: Any) -> None:
    """docs/coding-agent-clis.md names each type and each of its keys (policy keys aside)."""
    from orchestrator.config.spec import POLICY_FIELDS

    text = (DOCS / "coding-agent-clis.md").read_text(encoding="utf-8")
    type_name = spec.model_fields["type"].annotation.__args__[0]
    assert f"`{type_name}`" in text, f"coding-agent-clis.md: type {type_name!r} not named"
    keys = [k for k in spec.model_fields if k not in {"type", *POLICY_FIELDS}]
    missing = [k for k in keys if f"`{k}`" not in text]
    assert not missing, f"coding-agent-clis.md: {type_name} keys {missing} not documented"


def test_the_cli_page_says_what_the_trial_missed() -> None:
    """Keys each CLI needs, the install script, and a runnable example."""
    text = (DOCS / "coding-agent-clis.md").read_text(encoding="utf-8")
    for needed in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        assert needed in text, f"coding-agent-clis.md does not say {needed} is needed"
    assert (
        "scripts/install-cli-agents.sh" in text
        and (ROOT / "scripts/install-cli-agents.sh").exists()
    )
    assert "SimulatedServer" in text


def test_async_tests_with_the_fixtures_are_shown_and_run() -> None:
    block = section_code("Async tests with the fixtures")
    assert block.page == "docs/testing.md" and block.marker("not-run") is None
    assert "async def test_" in block.text
    assert "simulated_server" in block.text and "fake_clock" in block.text


def test_running_a_local_redis_is_documented() -> None:
    text = (DOCS / "health.md").read_text(encoding="utf-8")
    section = text.split("## Running a local Redis", 1)
    assert len(section) == 2 and "redis-server" in section[1] and "REDIS_URL" in section[1]
