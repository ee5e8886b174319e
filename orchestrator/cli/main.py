"""The ``failover`` command: run a chain file, check it, and the plug-in commands.

::

    failover run chain.yaml --agent review "Review this diff"   # prints the answer
    failover run chain.yaml -v --stream "Review this diff"      # text as it comes, progress
    echo "text" | failover run chain.yaml --json -              # the whole Result as JSON
    failover run chain.yaml --workflow release --input topic=x  # every step's answer
    failover check chain.yaml --ping                            # validate; ping each provider
    failover health chain.yaml --json                           # circuits in the shared store
    failover run chain.yaml --workflow w --run-id pr-1          # durable: rerun skips done steps
    failover runs list | failover runs show pr-1                # what the journal holds
    failover explain chain.yaml --prompt-file p.txt             # the order a run would try
    failover simulate --port 8787 --script faults.json          # the simulated server (plug-in)
    failover demo                                               # the example chains (plug-in)

``run``, ``check``, ``health`` and ``explain`` are built in (:mod:`orchestrator.cli.run`,
``check``, ``health``, ``explain``); every other command comes from the
``failover.commands`` entry-point group (:mod:`orchestrator.cli.plugins`), which
is how ``demo`` and ``simulate`` arrive from the ``providers`` package.

Exit codes: 0 success, 1 the run failed (every provider failed, or a terminal
error), 2 bad file or arguments, 130 interrupted, 141 stdout closed before
everything was written (``| head``: quietly, as a command SIGPIPE ended).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import NoReturn

from orchestrator import events
from orchestrator.cli import check, explain, health, run, runs
from orchestrator.cli.plugins import GROUP, Command, load_commands
from orchestrator.cli.text import MAX_STDIN_BYTES, UsageError, tolerant_stdout

__all__ = ["MAX_STDIN_BYTES", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: stdout was closed by its reader (``failover run ... | head``): what a shell reports for a
#: command SIGPIPE ended (128 + 13), never 1, which means every provider failed.
EXIT_PIPE = 141
_NO_PLUGINS = (
    f"no plug-in commands are installed (entry-point group {GROUP!r} is empty):\n"
    "'demo' and 'simulate' come with the providers package of failover-orchestrator"
)


class _Parser(argparse.ArgumentParser):
    """argparse, with a hint on a missing command when no plug-in is installed."""

    hint: str | None = None

    def error(self, message: str) -> NoReturn:
        if self.hint and "invalid choice" in message:
            message = f"{message}\n{self.hint}"
        super().error(message)


class _CommandParser(argparse.ArgumentParser):
    """A sub-command's parser: options may follow positionals ("run FILE PROMPT --json")."""

    _intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing:  # the intermixed parse calls back here, twice
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _version() -> str:
    try:
        return metadata.version("failover-orchestrator")
    except metadata.PackageNotFoundError:
        return "unknown"


def _add_output(parser: argparse.ArgumentParser) -> None:
    style = parser.add_mutually_exclusive_group()
    style.add_argument(
        "--rich",
        dest="tables",
        action="store_const",
        const="rich",
        help="rich tables even when stdout is not a terminal (needs the rich extra)",
    )
    style.add_argument(
        "--plain",
        dest="tables",
        action="store_const",
        const="plain",
        help="plain text even on a terminal",
    )


@dataclass(frozen=True, slots=True)
class _Builtin:
    """``run`` and ``check``: the same :class:`Command` shape as a plug-in's."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _add_output(parser)
        self.arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        return self.handler(args)


def _parser(plugins: dict[str, Command], problems: list[str]) -> _Parser:
    """The ``failover`` parser: built-ins and plug-ins, each on its own sub-parser;
    plug-in problems (one a line) are appended to ``problems``."""
    builtins: dict[str, Command] = {
        "run": _Builtin("run an agent or a workflow from a chain file", run.add_arguments, run.run),
        "check": _Builtin(
            "run every check `run` makes before sending (and ping the providers)",
            check.add_arguments,
            check.check,
        ),
        "health": _Builtin(
            "each provider's circuit from the chain file's shared health store",
            health.add_arguments,
            health.health,
        ),
        "runs": _Builtin(
            "durable workflow runs in a journal: list them, or show one's steps",
            runs.add_arguments,
            runs.runs,
        ),
        "explain": _Builtin(
            "the order a run would try the children in, and why any would be skipped",
            explain.add_arguments,
            explain.explain_command,
        ),
    }
    notes = [_NO_PLUGINS] if not plugins else []
    notes += [
        f"command {n!r} from a plug-in is ignored: built in" for n in plugins if n in builtins
    ]
    parser = _Parser(
        prog="failover",
        description="Keep LLM calls working when providers fail.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(
            [
                *notes,
                "'failover COMMAND --help' describes each one. Exit codes: 0 success,\n"
                "1 the run failed, 2 bad file or arguments, 130 interrupted,\n"
                "141 stdout closed early (as by `| head`).",
            ]
        ),
    )
    parser.hint = _NO_PLUGINS if not plugins else None
    parser.add_argument("--version", action="version", version=f"failover {_version()}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_CommandParser
    )
    for name in builtins.keys() & plugins.keys():
        problems.append(f"plug-in command {name!r} ignored: {name} is built in")
    extra = {name: command for name, command in plugins.items() if name not in builtins}
    for name, command in {**builtins, **extra}.items():
        sub = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(handler=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``failover`` console script; returns the exit code."""
    tolerant_stdout()
    plugins, problems = load_commands()
    parser = _parser(plugins, problems)
    for problem in problems:
        print(f"failover: warning: {problem}", file=sys.stderr)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on bad arguments, 0 for --help/--version
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        # stdout carries only the answer (or JSON): keep structlog events off it,
        # even when something in the process has configured structlog.
        with events.enabled(False):
            code: int = args.handler(args)
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
            return code
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:
        # A Ctrl-C may land between making a coroutine and running it (inside asyncio.run's
        # set-up): after it, "never awaited" is expected, not news for the user.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        print("failover: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        print(f"failover: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _drop_stdout() -> None:
    """The reader of stdout went away: send what is still buffered to /dev/null, so the
    interpreter's last flush at exit does not print a traceback either."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
