"""ConfigError: a chain file problem, located by file, line and field path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import FailoverError

__all__ = ["ConfigError", "Problem", "field_path", "value_at"]

Path = tuple[str | int, ...]


def value_at(data: Any, path: Path) -> Any:
    """The raw value at ``path`` in a parsed file (None when the path does not exist)."""
    for part in path:
        if isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def field_path(path: Path) -> str:
    """``('agents', 'review', 'providers', 1)`` -> ``agents.review.providers[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: where (file, line when known, field path) and what is wrong."""

    file: str
    line: int | None
    path: Path
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.path:
            return f"{where}: {field_path(self.path)}: {self.message}"
        return f"{where}: {self.message}"


class ConfigError(FailoverError, ValueError):
    """The chain file cannot be used; ``str(err)`` lists every problem, one per line.

    Each line reads ``FILE:LINE: FIELD.PATH: what is wrong and what is allowed``
    (``LINE`` is left out where the parser cannot know it). ``problems`` holds
    the structured form. No message ever contains a secret's value.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("ConfigError: needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def line(self) -> int | None:
        """The line of the first problem (None when unknown)."""
        return self.problems[0].line

    @property
    def file(self) -> str:
        return self.problems[0].file

    def __reduce__(self) -> tuple[object, ...]:
        return (ConfigError, (self.problems,))
