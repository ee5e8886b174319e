"""Which pages and blocks the documentation tests run: README.md and every docs/**/*.md page.

The "what": the pages (:func:`pages`), their fenced blocks with the heading above
each and the ``<!-- ...: ... -->`` markers (:func:`parse_page`), the files they
define and the cases to run (:func:`collect`). tests/test_readme.py decides how a
case runs and when it passes (its docstring describes the markers);
tests/readme_runner.py is the child process that runs one.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pages(root: Path = ROOT) -> list[Path]:
    """README.md, then every Markdown page under docs/ (subfolders included), sorted."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def page_name(path: Path, root: Path = ROOT) -> str:
    """How a page is named in test ids and messages: its path from the repository root."""
    return path.relative_to(root).as_posix()


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
        command = words[:2] in (["failover", "run"], ["failover", "check"], ["failover", "explain"])
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


def load(paths: list[Path] | None = None, root: Path = ROOT) -> list[Block]:
    """Every block of ``paths`` (default: :func:`pages`), page by page."""
    paths = pages(root) if paths is None else paths
    return [
        block
        for path in paths
        for block in parse_page(page_name(path, root), path.read_text(encoding="utf-8"))
    ]


def files_of(blocks: list[Block]) -> dict[str, str]:
    """The files the blocks define (name -> text), shared by every case of every page."""
    return {name: b.text for b in blocks if (name := b.filename())}


def section_code(heading: str, blocks: list[Block] | None = None) -> Block:
    """The first python block under ``heading``, on whichever page it now lives."""
    found = [b for b in (load() if blocks is None else blocks) if b.heading == heading]
    block = next((b for b in found if b.lang == "python"), None)
    assert block is not None, f"no python block under a heading {heading!r} in {pages()}"
    return block
