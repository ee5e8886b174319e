"""The ``failover`` command: run a chain file, check it, simulate providers, demo.

::

    failover run chain.yaml --agent review "Review this diff"   # prints the answer
    echo "text" | failover run chain.yaml --json -              # the whole Result as JSON
    failover run chain.yaml --workflow release --input topic=x  # every step's answer
    failover check chain.yaml --ping                            # validate; ping each provider
    failover simulate --port 8787 --script faults.json          # the simulated server
    failover demo                                               # the example chains, no keys

Exit codes: 0 success, 1 the run failed (every provider failed, or a terminal
error), 2 bad file or arguments, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from importlib import metadata
from typing import Any, TextIO

from orchestrator import events
from orchestrator.cli.report import (
    check_summary,
    failure_json,
    ping_all,
    ping_table,
    result_json,
)
from orchestrator.config import Config, ConfigError, load_config
from orchestrator.errors import FallbackError, HookError, ProviderError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

# A prompt read from stdin is read up to this size and refused beyond it: 8 MiB is about
# two million tokens, more than any model's context window.
MAX_STDIN_BYTES = 8 << 20


class _Usage(Exception):
    """Bad arguments: printed, exit code 2."""


def _version() -> str:
    try:
        return metadata.version("failover-orchestrator")
    except metadata.PackageNotFoundError:
        return "unknown"


_COMMANDS = {
    "run": "run an agent or a workflow from a chain file",
    "check": "validate a chain file (and ping its providers)",
    "simulate": "run the simulated provider server",
    "demo": "run the example chains against simulated providers",
}


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="failover",
        description="Keep LLM calls working when providers fail.",
        epilog="commands:\n"
        + "\n".join(f"  {name:<9} {text}" for name, text in _COMMANDS.items())
        + "\n\n'failover COMMAND --help' describes each one. Exit codes: 0 success, "
        "1 the run failed, 2 bad file or arguments, 130 interrupted.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"failover {_version()}")
    parser.add_argument("command", choices=list(_COMMANDS), metavar="COMMAND")
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _command_parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"failover {command}", description=_COMMANDS[command])
    if command == "run":
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
    elif command == "check":
        parser.add_argument("file", help="chain file (.yaml, .yml or .toml)")
        parser.add_argument("--ping", action="store_true", help="one tiny request per provider")
        parser.add_argument(
            "--timeout", type=float, default=10.0, help="ping timeout (default 10 s)"
        )
    elif command == "simulate":
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8787, help="port (0 = any free one)")
        parser.add_argument("--script", help="JSON file: route -> list of fault specs")
    else:
        parser.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    return parser


def _parse(argv: list[str] | None) -> argparse.Namespace:
    top = _top_parser().parse_args(argv)
    # Intermixed: options may come after the prompt ("run FILE PROMPT --json").
    args = _command_parser(top.command).parse_intermixed_args(top.args)
    args.command = top.command
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``failover`` console script; returns the exit code."""
    try:
        args = _parse(argv)
    except SystemExit as exc:  # argparse: 2 on bad arguments, 0 for --help/--version
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        # stdout carries only the answer (or JSON): keep structlog events off it,
        # even when something in the process has configured structlog.
        with events.enabled(False):
            return _dispatch(args)
    except KeyboardInterrupt:
        print("failover: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Usage as exc:
        print(f"failover: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return _run(args)
    if args.command == "check":
        return _check(args)
    if args.command == "simulate":
        return _simulate(args)
    from providers.demo import run_demo

    return run_demo(plain=args.plain)


def _load(path: str) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise _Usage(str(exc).replace("\n", "\nfailover: error: ")) from None


def _read_prompt(prompt: str | None, stdin: TextIO) -> str:
    text = _read_stdin(stdin) if prompt in (None, "-") else _readable(str(prompt))
    if not text.strip():
        raise _Usage("empty prompt: give PROMPT, or '-' and pipe text on stdin")
    return text.rstrip("\n")


def _read_stdin(stdin: TextIO) -> str:
    """stdin as text, at most ``MAX_STDIN_BYTES``; undecodable bytes become U+FFFD.

    A user piping bytes into a command expects them used, not a traceback, so
    the CLI replaces what is not UTF-8 (the library refuses lone surrogates).
    """
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        data: bytes = buffer.read(MAX_STDIN_BYTES + 1)
        size, text = len(data), data.decode("utf-8", errors="replace")
    else:  # a text stream standing in for stdin (embedding, tests)
        text = stdin.read(MAX_STDIN_BYTES + 1)
        size, text = len(text), _readable(text)
    if size > MAX_STDIN_BYTES:
        raise _Usage(
            f"stdin holds more than {MAX_STDIN_BYTES} bytes ({MAX_STDIN_BYTES >> 20} MiB); "
            "pass a shorter prompt (or a summary of it)"
        )
    return text


def _readable(text: str) -> str:
    """Text from argv or a text stream with its undecodable bytes (lone surrogates) as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:  # surrogateescape: the bytes the user gave, so valid UTF-8 parts survive
            raw = text.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", errors="surrogatepass")
        return raw.decode("utf-8", errors="replace")
    return text


def _target(args: argparse.Namespace, config: Config) -> tuple[str, str]:
    """("agent" | "workflow", name), chosen from the flags or the file's only entry."""
    if args.workflow is not None:
        if args.workflow not in config.workflows:
            raise _Usage(
                f"{config.path}: no workflow {args.workflow!r}; "
                f"workflows: {', '.join(config.workflows) or '(none)'}"
            )
        return "workflow", args.workflow
    if args.agent is not None:
        if args.agent not in config.agents:
            raise _Usage(
                f"{config.path}: no agent {args.agent!r}; "
                f"agents: {', '.join(config.agents) or '(none)'}"
            )
        return "agent", args.agent
    if len(config.agents) == 1:
        return "agent", next(iter(config.agents))
    if not config.agents and len(config.workflows) == 1:
        return "workflow", next(iter(config.workflows))
    raise _Usage(
        f"{config.path} declares agents {', '.join(config.agents) or '(none)'} and workflows "
        f"{', '.join(config.workflows) or '(none)'}; choose one with --agent or --workflow"
    )


def _inputs(args: argparse.Namespace, prompt: str | None) -> dict[str, str]:
    inputs: dict[str, str] = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise _Usage(f"--input {item!r}: write NAME=VALUE with NAME an identifier")
        inputs[name] = _readable(value)
    if prompt is not None:
        inputs["input"] = prompt
    return inputs


def _run(args: argparse.Namespace) -> int:
    config = _load(args.file)
    kind, name = _target(args, config)
    if args.input and kind == "agent":
        raise _Usage("--input is for workflows; give the agent's prompt as PROMPT")
    if args.timeout is not None and args.timeout <= 0:
        raise _Usage(f"--timeout {args.timeout}: must be > 0 seconds")
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
    for line in check_summary(config):
        print(line)
    if not args.ping:
        return EXIT_OK
    if args.timeout <= 0:
        raise _Usage(f"--timeout {args.timeout}: must be > 0 seconds")
    rows = asyncio.run(ping_all(config.providers, config.provider_types, args.timeout))
    print()
    for line in ping_table(rows):
        print(line)
    failed = [r.provider for r in rows if not r.ok]
    if failed:
        print(f"\n{len(failed)} of {len(rows)} provider(s) failed: {', '.join(failed)}")
        return EXIT_FAILED
    return EXIT_OK


def _simulate(args: argparse.Namespace) -> int:
    from providers.simulated import main as simulate

    argv = ["--host", args.host, "--port", str(args.port)]
    if args.script:
        argv += ["--script", args.script]
    return simulate(argv)


if __name__ == "__main__":
    sys.exit(main())
