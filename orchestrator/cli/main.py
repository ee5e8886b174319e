"""The ``failover`` command: run a chain file, check it, and the plug-in commands.

::

    failover run chain.yaml --agent review "Review this diff"   # prints the answer
    echo "text" | failover run chain.yaml --json -              # the whole Result as JSON
    failover run chain.yaml --workflow release --input topic=x  # every step's answer
    failover check chain.yaml --ping                            # validate; ping each provider
    failover simulate --port 8787 --script faults.json          # the simulated server (plug-in)
    failover demo                                               # the example chains (plug-in)

``run`` and ``check`` live here; every other command comes from the
``failover.commands`` entry-point group (:mod:`orchestrator.cli.plugins`), which
is how ``demo`` and ``simulate`` arrive from the ``providers`` package.

Exit codes: 0 success, 1 the run failed (every provider failed, or a terminal
error), 2 bad file or arguments, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, NoReturn, TextIO

from orchestrator import events
from orchestrator.cli.plugins import GROUP, Command, load_commands
from orchestrator.cli.report import (
    CHECK_HEADER,
    PING_HEADER,
    check_rows,
    check_summary,
    failure_json,
    ping_all,
    ping_rows,
    result_json,
)
from orchestrator.cli.tables import ATTEMPT_HEADER, Tables, attempt_rows
from orchestrator.cli.text import MAX_STDIN_BYTES, UsageError, read_stdin, readable, tolerant_stdout
from orchestrator.config import Config, ConfigError, load_config
from orchestrator.errors import FallbackError, HookError, ProviderError
from orchestrator.types import Attempt

__all__ = ["MAX_STDIN_BYTES", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
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


def _add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="chain file (.yaml, .yml or .toml)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--agent", help="agent to run (optional when the file has one agent)")
    which.add_argument("--workflow", help="workflow to run")
    parser.add_argument(
        "prompt",
        nargs="?",
        help="the prompt; '-' or nothing reads stdin (at most 8 MiB; bytes that are not "
        "UTF-8 become U+FFFD)",
    )
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--timeout", type=float, help="whole-run timeout in seconds")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="workflow input (repeatable); the prompt is the input named 'input'",
    )


def _add_check(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="chain file (.yaml, .yml or .toml)")
    parser.add_argument("--ping", action="store_true", help="one tiny request per provider")
    parser.add_argument("--timeout", type=float, default=10.0, help="ping timeout (default 10 s)")


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
        "run": _Builtin("run an agent or a workflow from a chain file", _add_run, _run),
        "check": _Builtin("validate a chain file (and ping its providers)", _add_check, _check),
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
                "1 the run failed, 2 bad file or arguments, 130 interrupted.",
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
            return code
    except KeyboardInterrupt:
        # A Ctrl-C may land between making a coroutine and running it (inside asyncio.run's
        # set-up): after it, "never awaited" is expected, not news for the user.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        print("failover: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        print(f"failover: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _load(path: str) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc).replace("\n", "\nfailover: error: ")) from None


def _read_prompt(prompt: str | None, stdin: TextIO) -> str:
    text = read_stdin(stdin) if prompt in (None, "-") else readable(str(prompt))
    if not text.strip():
        raise UsageError("empty prompt: give PROMPT, or '-' and pipe text on stdin")
    return text.rstrip("\n")


def _names(names: Mapping[str, Any]) -> str:
    return ", ".join(names) or "(none)"


def _target(args: argparse.Namespace, config: Config) -> tuple[str, str]:
    """("agent" | "workflow", name), chosen from the flags or the file's only entry."""
    for kind, wanted, declared in (
        ("workflow", args.workflow, config.workflows),
        ("agent", args.agent, config.agents),
    ):
        if wanted is None:
            continue
        if wanted not in declared:
            raise UsageError(f"{config.path}: no {kind} {wanted!r}; {kind}s: {_names(declared)}")
        return kind, wanted
    if len(config.agents) == 1:
        return "agent", next(iter(config.agents))
    if not config.agents and len(config.workflows) == 1:
        return "workflow", next(iter(config.workflows))
    raise UsageError(
        f"{config.path} declares agents {_names(config.agents)} and workflows "
        f"{_names(config.workflows)}; choose one with --agent or --workflow"
    )


def _inputs(args: argparse.Namespace, prompt: str | None) -> dict[str, str]:
    inputs: dict[str, str] = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--input {item!r}: write NAME=VALUE with NAME an identifier")
        inputs[name] = readable(value)
    if prompt is not None:
        inputs["input"] = prompt
    return inputs


def _run(args: argparse.Namespace) -> int:
    config = _load(args.file)
    kind, name = _target(args, config)
    if args.input and kind == "agent":
        raise UsageError("--input is for workflows; give the agent's prompt as PROMPT")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be > 0 seconds")
    if kind == "agent":
        prompt = _read_prompt(args.prompt, sys.stdin)
        return asyncio.run(_run_agent(config, name, prompt, args))
    text = None if args.input and args.prompt is None else _read_prompt(args.prompt, sys.stdin)
    return asyncio.run(_run_workflow(config, name, _inputs(args, text), args))


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


async def _run_agent(config: Config, name: str, prompt: str, args: argparse.Namespace) -> int:
    agent = config.agents[name]
    try:
        result = await agent.run(prompt, timeout=args.timeout)
    except FallbackError as exc:
        print(f"failover: {name}: {exc}", file=sys.stderr)
        _attempts_table(args, exc.attempts)
        if args.json:
            _print_json(failure_json(exc, exc.attempts))
        return EXIT_FAILED
    except (ProviderError, HookError) as exc:
        print(f"failover: {name}: stopped by {type(exc).__name__}: {exc}", file=sys.stderr)
        if args.json:
            _print_json(failure_json(exc))
        return EXIT_FAILED
    if args.json:
        _print_json(result_json(result))
    else:
        print(result.text)
    _attempts_table(args, result.attempts)
    return EXIT_OK


async def _run_workflow(
    config: Config, name: str, inputs: dict[str, str], args: argparse.Namespace
) -> int:
    from orchestrator.workflow import WorkflowError

    workflow = config.workflows[name]
    try:
        if args.timeout is not None:
            results = await asyncio.wait_for(workflow.run(inputs), args.timeout)
        else:
            results = await workflow.run(inputs)
    except WorkflowError as exc:
        print(f"failover: workflow {name}: {exc}", file=sys.stderr)
        if args.json:
            attempts = getattr(exc.error, "attempts", ())
            _print_json({**failure_json(exc, attempts), "phase": exc.phase, "step": exc.step})
        return EXIT_FAILED
    except (ValueError, TimeoutError) as exc:  # a prompt referencing a missing input
        print(f"failover: workflow {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, ValueError) else EXIT_FAILED
    if args.json:
        _print_json(
            {
                "ok": True,
                "workflow": name,
                "steps": {step: result_json(r) for step, r in results.items()},
                "failures": {
                    step: {"type": type(e).__name__, "message": str(e)}
                    for step, e in results.failures.items()
                },
            }
        )
        return EXIT_OK
    for step, result in results.items():
        print(f"== {step} (answered by {result.handled_by}) ==")
        print(result.text)
    for step, error in results.failures.items():
        print(f"== {step} failed: {type(error).__name__}: {error} ==")
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    config = _load(args.file)
    tables = Tables(args.tables)
    if tables.rich:
        print(f"ok: {config.path}")
        tables.table(CHECK_HEADER, check_rows(config))
    else:
        for line in check_summary(config):
            print(line)
    if not args.ping:
        return EXIT_OK
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be > 0 seconds")
    rows = asyncio.run(ping_all(config.providers, config.provider_types, args.timeout))
    print()
    styles = ["green" if r.ok else "red" for r in rows]
    tables.table(PING_HEADER, ping_rows(rows), styles=styles)
    failed = [r.provider for r in rows if not r.ok]
    if failed:
        print(f"\n{len(failed)} of {len(rows)} provider(s) failed: {', '.join(failed)}")
        return EXIT_FAILED
    return EXIT_OK


def _attempts_table(args: argparse.Namespace, attempts: Sequence[Attempt]) -> None:
    """With rich tables on, every attempt of a run, on stderr: stdout keeps only the answer."""
    choice = args.tables or ("rich" if sys.stdout.isatty() else "plain")
    tables = Tables(choice, file=sys.stderr)
    if tables.rich and attempts and not args.json:
        styles = ["green" if a.ok else "red" for a in attempts]
        tables.table(ATTEMPT_HEADER, attempt_rows(attempts), title="attempts", styles=styles)
