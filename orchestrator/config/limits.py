"""Bounds on a chain file, checked before any parser recurses: size, nesting, YAML aliases.

A chain file is a few kilobytes of configuration, but it may come from
anywhere (a pull request, a download). ``tomllib`` and PyYAML's composer
recurse once per nesting level, and YAML aliases can expand exponentially
(the "billion laughs"), so every file is held to:

- ``MAX_FILE_BYTES`` (256 KiB): at most that many bytes (plus one) are read.
  Real chain files are a few KiB; PyYAML's pure-Python parser needs seconds
  per MiB of dense YAML, so the cap also bounds the time a valid file takes;
- ``MAX_DEPTH`` (64): nested mappings/sequences/tables/arrays, the file's top
  level counting as one (scalars do not count); TOML brackets are counted by a linear scan before
  ``tomllib`` runs, YAML depth while composing, and TOML dotted keys and
  headers on the parsed data;
- ``MAX_ALIAS_NODES`` (10,000): the nodes that YAML aliases add when expanded
  (an alias costs the size of what it names), and no alias may name a node
  that contains it.

Each refusal is a ``ConfigError`` with the file and, where known, the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path as FsPath
from typing import Any

import yaml

from orchestrator.config.problems import ConfigError, Path, Problem

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "BoundedYamlLoader",
    "check_data_depth",
    "check_toml_nesting",
    "read_capped",
]

MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 64
MAX_ALIAS_NODES = 10_000


def _refuse(label: str, line: int | None, message: str) -> ConfigError:
    return ConfigError([Problem(label, line, (), message)])


def _too_deep(label: str, line: int | None) -> ConfigError:
    return _refuse(
        label, line, f"nested deeper than {MAX_DEPTH} levels; a chain file needs a handful"
    )


def _unprintable(label: str, text: str, position: int) -> ConfigError:
    """YAML allows no control character anywhere (even in a comment): say where and what."""
    line = text.count("\n", 0, position) + 1
    column = position - text.rfind("\n", 0, position)
    code = f"U+{ord(text[position]):04X}" if 0 <= position < len(text) else "a character"
    return _refuse(
        label,
        line,
        f"invalid YAML: {code} at column {column} is a control character, which YAML "
        "allows nowhere, not even in a comment; delete it",
    )


def read_capped(path: FsPath, label: str) -> str:
    """The file's text (UTF-8, universal newlines), refusing a file over ``MAX_FILE_BYTES``.

    Reads at most one byte more than the cap, so a huge file (or an endless
    device) costs nothing.
    """
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise _refuse(label, None, "no such file") from None
    except OSError as exc:
        raise _refuse(label, None, f"cannot read: {exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _refuse(
            label,
            None,
            f"the file is larger than {MAX_FILE_BYTES} bytes ({MAX_FILE_BYTES // 1024} KiB); "
            "a chain file is small: is this the right file?",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(label, None, f"cannot read: {exc}") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as Path.read_text did


# -- YAML: depth and alias expansion, counted while composing ------------------------


class BoundedYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses deep nesting and alias expansion beyond the bounds.

    PyYAML's composer recurses once per level and hands an alias the very node
    it names, so both are checked in ``compose_node`` before it recurses.
    """

    def __init__(self, text: str, label: str) -> None:
        try:
            super().__init__(text)  # checks every character of the text at once
        except yaml.reader.ReaderError as exc:
            raise _unprintable(label, text, exc.position) from None
        self._label = label
        self._depth = 0
        self._nodes = 0  # nodes composed so far, aliases counted expanded
        self._alias_nodes = 0  # the part of _nodes that aliases added
        self._sizes: dict[str, int] = {}  # anchor -> expanded size of its (finished) node

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent):
            self._count_alias(str(event.anchor), line)
            return super().compose_node(parent, index)
        if isinstance(event, yaml.CollectionStartEvent) and self._depth >= MAX_DEPTH:
            raise _too_deep(self._label, line)
        start = self._nodes
        self._nodes += 1
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if event.anchor is not None:
            self._sizes[event.anchor] = self._nodes - start
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's constructors raise bare ``ValueError``/``AttributeError`` (``!!timestamp
        nope``, ``2001-13-40``, an integer of 5,000 digits): a ``ConstructorError`` at the
        node instead, so the file's line is named."""
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, ConfigError):
            raise
        except Exception as exc:  # the one boundary where PyYAML's own errors enter
            tag = str(node.tag).rpartition(":")[2] or "tagged"
            what = f"cannot read this {tag} value ({type(exc).__name__})"
            fix = "quote it to keep it as text, or correct it"
            raise yaml.constructor.ConstructorError(
                None, None, f"{what}; {fix}", node.start_mark
            ) from None

    def _count_alias(self, anchor: str, line: int | None) -> None:
        size = self._sizes.get(anchor)
        if size is None:
            if anchor in self.anchors:  # named, but still being composed: a cycle
                raise _refuse(
                    self._label,
                    line,
                    f"alias *{anchor} names a node that contains it; recursive YAML is refused",
                )
            return  # undefined: PyYAML's own error says so, with its line
        self._nodes += size
        self._alias_nodes += size
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise _refuse(
                self._label,
                line,
                f"aliases expand to more than {MAX_ALIAS_NODES} nodes; "
                "a chain file needs few (refusing an alias bomb)",
            )


# -- TOML: a linear scan of brackets, outside strings and comments ---------------------

_TOML_SPECIAL = re.compile(r"""["'#\[\]{}]""")
_TOML_STRING_END = {
    '"""': re.compile(r'(?:[^"\\]|\\.|"{1,2}(?!"))*"{3,5}', re.DOTALL),
    "'''": re.compile(r"(?:[^']|'{1,2}(?!'))*'{3,5}"),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"[^'\n]*'"),
}


def check_toml_nesting(label: str, text: str) -> None:
    """Refuse arrays and inline tables nested deeper than ``MAX_DEPTH`` before ``tomllib``.

    The top-level table is one level, so at most ``MAX_DEPTH - 1`` brackets
    may be open at once. Strings and comments are skipped; on text that is
    not valid TOML the scan stops wherever it loses track, and ``tomllib``
    reports the syntax error.
    """
    depth, pos = 0, 0
    while (m := _TOML_SPECIAL.search(text, pos)) is not None:
        char, pos = m.group(), m.end()
        if char in "[{":
            depth += 1
            if depth >= MAX_DEPTH:
                raise _too_deep(label, text.count("\n", 0, pos) + 1)
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == "#":
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
        else:
            opener = text[m.start() : m.start() + 3]
            if opener not in ('"""', "'''"):
                opener = char
            closed = _TOML_STRING_END[opener].match(text, m.start() + len(opener))
            if closed is None:
                return  # an unterminated string: tomllib's error, not ours
            pos = closed.end()


def check_data_depth(label: str, data: Any, line_of: Callable[[Path], int | None]) -> None:
    """Refuse parsed data nested deeper than ``MAX_DEPTH`` (TOML dotted keys and headers).

    Iterative, so it cannot itself recurse; ``line_of(path)`` locates the refusal.
    """
    stack: list[tuple[Any, Path]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) >= MAX_DEPTH and isinstance(value, dict | list):
            raise _too_deep(label, line_of(path))
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
