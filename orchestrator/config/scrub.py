"""Keep environment values out of chain-file errors.

A value that came from ``${VAR}`` may hold a credential (``GATEWAY_URL`` with
``?api_key=...``), so no error may print it: :func:`show_value` names the
variable instead ("the value of ${GATEWAY_URL}"), and :meth:`EnvValues.scrub`
removes such values (and their URL parts) from messages written by specs and
constructors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from orchestrator.config.problems import Path, Problem, value_at
from orchestrator.config.source import Source

__all__ = ["EnvValues", "constructor_problem", "show_value"]

#: Fields whose literal values are never printed either (they may hold credentials).
SECRET_FIELDS = ("api_key", "headers", "env", "redis_url")


def show_value(path: Path, value: Any, env_paths: Mapping[Path, tuple[str, ...]]) -> str:
    """How an error shows the value at ``path``: never an environment value or a secret."""
    for n in range(len(path), 0, -1):
        names = env_paths.get(path[:n])
        if names:
            return "the value of " + ", ".join(f"${{{v}}}" for v in names)
    if any(p in SECRET_FIELDS for p in path if isinstance(p, str)):
        return "(hidden)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _url_parts(value: str) -> list[str]:
    """The pieces of a URL that could identify or authorise (host, user, password, query)."""
    if "://" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
        pieces = [parts.netloc, parts.username, parts.password, parts.hostname, parts.query]
    except ValueError:
        return []
    pieces += [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    return [p for p in pieces if p and len(p) >= 3]


@dataclass(frozen=True)
class EnvValues:
    """The expanded data and which field paths took a value from the environment."""

    data: Mapping[str, Any]
    paths: Mapping[Path, tuple[str, ...]]

    def show(self, path: Path, value: Any) -> str:
        return show_value(path, value, self.paths)

    def scrub(self, message: str, under: Path) -> str:
        """``message`` without any environment value used at or below ``under``."""
        whole: dict[str, str] = {}
        pieces: set[str] = set()
        for path, names in self.paths.items():
            if path[: len(under)] != under:
                continue
            value = value_at(self.data, path)
            if not isinstance(value, str) or not value:
                continue
            label = "the value of " + ", ".join(f"${{{n}}}" for n in names)
            for variant in {value, value.strip(), value.rstrip("/")}:
                whole[repr(variant)] = label
                if len(variant) >= 4:
                    whole[variant] = label
            pieces.update(_url_parts(value))
        for old in sorted(whole, key=len, reverse=True):
            message = message.replace(old, whole[old])
        for old in sorted(pieces, key=len, reverse=True):
            message = message.replace(old, "***")
        return message


def constructor_problem(src: Source, where: Path, exc: BaseException, env: EnvValues) -> Problem:
    """A constructor's ``ValueError``/``TypeError``, reported at ``where`` without any
    environment value used there (the specs locate every rule they know; this is
    for what only the constructor knows)."""
    return src.problem(where, env.scrub(str(exc), where))
