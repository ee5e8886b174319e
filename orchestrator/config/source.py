"""Reading a chain file: YAML (safely) or TOML by extension, plus field path -> line.

pydantic reports a field path; the user needs the line. For YAML a compose
pass keeps every node's position, so the line is exact. ``tomllib`` keeps no
positions, so TOML lines come from a scan of table headers and ``key =``
lines: the line of the deepest key found on the path (for a value inside an
inline table or array, the line of the key holding it).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import yaml

from orchestrator.config.limits import (
    BoundedYamlLoader,
    check_data_depth,
    check_toml_nesting,
    read_capped,
)
from orchestrator.config.problems import ConfigError, Path, Problem

__all__ = ["Source", "read_source"]

Locator = Callable[[Path], "int | None"]


@dataclass(frozen=True, slots=True)
class Source:
    """A parsed chain file: its data and a way to find the line of a field path."""

    file: str
    data: dict[str, Any]
    locate: Locator

    def problem(self, path: Path, message: str) -> Problem:
        return Problem(self.file, self.locate(path), path, message)

    def error(self, path: Path, message: str) -> ConfigError:
        return ConfigError([self.problem(path, message)])


def read_source(path: str | FsPath) -> Source:
    """Read and parse ``path``; ``ConfigError`` for a missing file or a syntax error."""
    p = FsPath(path)
    label = str(path)
    suffix = p.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise ConfigError(
            [Problem(label, None, (), f"unknown extension {p.suffix!r}; use .yaml, .yml or .toml")]
        )
    text = read_capped(p, label)
    data, locate = _parse_toml(label, text) if suffix == ".toml" else _parse_yaml(label, text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            [
                Problem(
                    label,
                    locate(()),
                    (),
                    f"the file holds a {type(data).__name__}; "
                    "expected a mapping with providers, agents and workflows",
                )
            ]
        )
    return Source(label, data, locate)


# -- YAML ---------------------------------------------------------------------------


def _parse_yaml(label: str, text: str) -> tuple[Any, Locator]:
    loader = BoundedYamlLoader(text, label)
    try:
        root = loader.get_single_node()  # the nodes keep their positions, for lines
        if root is not None:
            _check_duplicates(label, root)  # first: constructing flattens merge keys in place
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        what = exc.problem or str(exc)
        if "'\\t'" in what and mark is not None:  # PyYAML's words do not say what to do
            what = f"a tab at column {mark.column + 1}: YAML allows none here; indent with spaces"
        raise ConfigError([Problem(label, line, (), f"invalid YAML: {what}")]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([Problem(label, None, (), f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()

    def locate(path: Path) -> int | None:
        return _yaml_line(root, path)

    return data, locate


def _check_duplicates(label: str, node: yaml.Node) -> None:
    """safe_load keeps the last of two equal keys silently; refuse them instead."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value != "<<":
                if key.value in seen:
                    raise ConfigError(
                        [
                            Problem(
                                label,
                                key.start_mark.line + 1,
                                (),
                                f"duplicate key {key.value!r} (first at line "
                                f"{seen[key.value]}); each key may appear once",
                            )
                        ]
                    )
                seen[key.value] = key.start_mark.line + 1
            _check_duplicates(label, value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicates(label, item)


def _yaml_line(root: yaml.Node | None, path: Path) -> int | None:
    if root is None:
        return None
    node: yaml.Node = root
    line = node.start_mark.line + 1
    for part in path:
        if isinstance(node, yaml.MappingNode):
            # Constructing put merged (<<) entries first: the mapping's own key is the last.
            for key, value in reversed(node.value):
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


# -- TOML ---------------------------------------------------------------------------

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(
    r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)


def _parse_toml(label: str, text: str) -> tuple[Any, Locator]:
    check_toml_nesting(label, text)  # tomllib recurses once per bracket
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_AT.search(message)
        line = int(m.group(1)) if m else None
        what = message[: m.start()] if m else message
        if m:
            what += f" (column {m.group(2)})"
        raise ConfigError([Problem(label, line, (), f"invalid TOML: {what}")]) from None
    except ValueError as exc:  # tomllib's int() of a 5,000-digit number: not a TOMLDecodeError
        raise ConfigError([_unreadable_toml(label, text, exc)]) from None
    lines = _toml_lines(text)

    def locate(path: Path) -> int | None:
        for n in range(len(path), 0, -1):
            found = lines.get(tuple(path[:n]))
            if found is not None:
                return found
        return None

    def locate_under(path: Path) -> int | None:
        # A path too deep to be written out is inside a longer dotted key or header.
        return locate(path) or min(
            (n for k, n in lines.items() if k[: len(path)] == path), default=None
        )

    check_data_depth(label, data, locate_under)  # dotted keys and headers nest without brackets
    return data, locate


def _unreadable_toml(label: str, text: str, exc: ValueError) -> Problem:
    """A value tomllib parsed but Python could not convert: name the line of a number too
    long for ``int()`` (over 4,300 digits), the one case known to reach here."""
    runs = (m for m in re.finditer(r"[0-9_]+", text) if m.end() - m.start() > 4000)
    long = next(runs, None)
    if long is None:
        return Problem(
            label, None, (), f"invalid TOML: a value cannot be read ({type(exc).__name__})"
        )
    line = text.count("\n", 0, long.start()) + 1
    return Problem(
        label,
        line,
        (),
        "invalid TOML: a number too long to read (over 4,300 digits); use a small one",
    )


def _dotted(key: str) -> list[str]:
    parts = re.findall(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_-]+)", key)
    return [a or b or c for a, b, c in parts]


def _toml_lines(text: str) -> dict[Path, int]:
    """Map concrete field paths to the line that defines them (headers and ``key =``)."""
    out: dict[Path, int] = {}
    counts: dict[Path, int] = {}  # array-of-tables path -> number of [[...]] seen
    table: Path = ()
    in_string = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.count('"""') % 2 == 1 or raw.count("'''") % 2 == 1:
            in_string = not in_string
            if not in_string:
                continue
            # the line opening a multi-line string may still start with "key ="
        elif in_string:
            continue
        header = _HEADER.match(raw)
        if header and not _KEY.match(raw):
            concrete: list[str | int] = []
            for part in _dotted(header.group(2)):
                concrete.append(part)
                latest = counts.get(tuple(concrete))
                if latest is not None:
                    concrete.append(latest - 1)
            if header.group(1) == "[[":
                if concrete and isinstance(concrete[-1], int):
                    concrete.pop()
                key = tuple(concrete)
                counts[key] = counts.get(key, 0) + 1
                concrete.append(counts[key] - 1)
            table = tuple(concrete)
            out.setdefault(table, number)
            continue
        key_match = _KEY.match(raw)
        if key_match:
            out.setdefault((*table, *_dotted(key_match.group(1))), number)
    return out
