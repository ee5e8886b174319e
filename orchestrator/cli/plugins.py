"""Commands that other packages add to ``failover``, found by entry point.

A distribution declares a command in its ``pyproject.toml``::

    [project.entry-points."failover.commands"]
    demo = "providers.demo:command"

The entry point's name is the sub-command (``failover demo``); the object it
names is a :class:`Command`: a ``help`` line, ``add_arguments(parser)`` to
declare its options on its own sub-parser, and ``run(args) -> exit code``.
This is how ``failover demo`` and ``failover simulate`` reach the CLI: the core
never imports the ``providers`` package that implements them.
"""

from __future__ import annotations

import argparse
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

__all__ = ["GROUP", "Command", "load_commands"]

GROUP = "failover.commands"


@runtime_checkable
class Command(Protocol):
    """A ``failover`` sub-command contributed by a plug-in."""

    @property
    def help(self) -> str:
        """One line for ``failover --help``."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's options and positionals on its sub-parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Run with the parsed arguments; return the exit code."""


def load_commands() -> tuple[dict[str, Command], list[str]]:
    """Every installed command by name (sorted), and a line per entry point that
    failed to load or is not a :class:`Command`: a broken plug-in is reported,
    and the other commands still work."""
    commands: dict[str, Command] = {}
    problems: list[str] = []
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        where = f"{point.name} = {point.value!r} ({GROUP})"
        try:
            command = point.load()
        except Exception as exc:
            problems.append(f"command {where} did not load: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(command, Command):
            problems.append(
                f"command {where} is not a Command: it needs `help`, "
                "`add_arguments(parser)` and `run(args)`"
            )
            continue
        commands[point.name] = command
    return commands, problems
