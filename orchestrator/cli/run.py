"""``failover run``: one agent or workflow of a chain file, the answer on stdout.

stdout carries only the answer (or the JSON); everything else (``-v`` progress,
errors, the attempts table) goes to stderr. ``--stream`` prints an agent's text
as it arrives.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Coroutine, Sequence
from contextlib import AsyncExitStack, ExitStack
from typing import Any, TextIO

from orchestrator.cli.preflight import check_workflow, load, names
from orchestrator.cli.progress import Progress
from orchestrator.cli.report import failure_json, result_json
from orchestrator.cli.tables import ATTEMPT_HEADER, Tables, attempt_rows
from orchestrator.cli.text import UsageError, read_file_text, read_stdin, readable
from orchestrator.config import Config
from orchestrator.errors import FallbackError, HookError, ProviderError
from orchestrator.routing.router import Keys
from orchestrator.tasks import cancel_and_wait
from orchestrator.types import Attempt, Result

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "add_arguments", "run"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_STREAM_WORKFLOW = (
    "--stream streams one agent's answer; a workflow's steps answer phase by phase and are "
    "printed when it ends: drop --stream (add -v to watch every step live)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``run``'s options and positionals."""
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
    parser.add_argument(
        "--stream",
        action="store_true",
        help="print an agent's text as it arrives (agents only; not with --json)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="each retry, fallback, circuit skip and the outcome, live on stderr",
    )
    parser.add_argument("--timeout", type=float, help="whole-run timeout in seconds")
    parser.add_argument("--affinity", help="affinity key: first to the child that served it last")
    parser.add_argument("--split-key", help="split key: the arm of a split (default: --affinity)")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="workflow input (repeatable); NAME=@PATH reads a file; the prompt is the input "
        "named 'input'",
    )
    durable = parser.add_argument_group("durable workflows (see 'failover runs')")
    durable.add_argument(
        "--run-id", help="journal the run under this id; rerun it to skip completed steps"
    )
    durable.add_argument(
        "--journal",
        help="journal path, sqlite:///PATH, postgresql://... or dbos+postgresql://... "
        "(default: the chain file's "
        "journal:, else .failover/journal.db)",
    )
    durable.add_argument(
        "--restart-changed",
        action="store_true",
        help="run again the completed steps whose prompt, inputs or chain changed",
    )
    durable.add_argument(
        "--on-interrupted",
        choices=("rerun", "fail"),
        default="rerun",
        help="a step a crash caught mid-call: send it again (default) or refuse",
    )


def _read_prompt(prompt: str | None, stdin: TextIO) -> str:
    text = read_stdin(stdin) if prompt in (None, "-") else readable(str(prompt))
    if not text.strip():
        raise UsageError("empty prompt: give PROMPT, or '-' and pipe text on stdin")
    return text.rstrip("\n")


def _target(args: argparse.Namespace, config: Config) -> tuple[str, str]:
    """("agent" | "workflow", name), chosen from the flags or the file's only entry."""
    for kind, wanted, declared in (
        ("workflow", args.workflow, config.workflows),
        ("agent", args.agent, config.agents),
    ):
        if wanted is None:
            continue
        if wanted not in declared:
            raise UsageError(f"{config.path}: no {kind} {wanted!r}; {kind}s: {names(declared)}")
        return kind, wanted
    if len(config.agents) == 1:
        return "agent", next(iter(config.agents))
    if not config.agents and len(config.workflows) == 1:
        return "workflow", next(iter(config.workflows))
    raise UsageError(
        f"{config.path} declares agents {names(config.agents)} and workflows "
        f"{names(config.workflows)}; choose one with --agent or --workflow"
    )


def _inputs(args: argparse.Namespace, prompt: str | None) -> dict[str, str]:
    inputs: dict[str, str] = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--input {item!r}: write NAME=VALUE with NAME an identifier")
        if value.startswith("@"):
            inputs[name] = read_file_text(value[1:], f"--input {value}")
        else:
            inputs[name] = readable(value)
    if prompt is not None:
        inputs["input"] = prompt
    return inputs


def _check_flags(args: argparse.Namespace, kind: str) -> None:
    if args.input and kind == "agent":
        raise UsageError("--input is for workflows; give the agent's prompt as PROMPT")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be > 0 seconds")
    if args.stream and args.json:
        raise UsageError("--stream prints text as it arrives, --json one document: choose one")
    if args.stream and kind == "workflow":
        raise UsageError(_STREAM_WORKFLOW)
    if kind == "agent" and (args.run_id or args.journal or args.restart_changed):
        raise UsageError("--run-id, --journal and --restart-changed are for workflows")
    if args.journal and not args.run_id:
        raise UsageError("--journal records a run: give it an id with --run-id")
    if kind == "workflow" and (args.affinity or args.split_key):
        raise UsageError("--affinity and --split-key route one agent's call; drop them")
    try:
        Keys.of(args.affinity, args.split_key)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """The ``run`` command: every check before anything is sent, then the run."""
    config = load(args.file)
    kind, name = _target(args, config)
    _check_flags(args, kind)
    work: Coroutine[Any, Any, int]
    if kind == "agent":
        prompt = _read_prompt(args.prompt, sys.stdin)
        work = _run_agent(config, name, prompt, args)
    else:
        text = None if args.input and args.prompt is None else _read_prompt(args.prompt, sys.stdin)
        inputs = _inputs(args, text)
        check_workflow(name, config.workflows[name], inputs)
        work = _run_workflow(config, name, inputs, args)
    with ExitStack() as stack:  # nothing is sent before this point
        if args.verbose:
            progress = stack.enter_context(Progress(rich=_rich_choice(args)).active())
            progress.line(_plan(config, kind, name))
            if kind == "agent" and config.agents[name].children:
                progress.waiting_on(config.agents[name].children[0].name)
            work = _with_heartbeat(progress, work)
        return asyncio.run(_with_health(config, work))


async def _with_heartbeat(progress: Progress, work: Coroutine[Any, Any, int]) -> int:
    """``work``, with ``-v`` saying who it waits on while nothing else happens."""
    beat = asyncio.create_task(progress.heartbeat())
    try:
        return await work
    finally:
        await cancel_and_wait(beat)


def _plan(config: Config, kind: str, name: str) -> str:
    """The first ``-v`` line, before anything is sent: what will be tried, in order."""
    if kind == "agent":
        return f"{name}: trying {' -> '.join(c.name for c in config.agents[name].children)}"
    phases = [p.name for p in config.workflows[name].phases]
    return f"workflow {name}: phases {' -> '.join(phases)}"


def _rich_choice(args: argparse.Namespace) -> bool | None:
    return None if args.tables is None else args.tables == "rich"


async def _with_health(config: Config, work: Coroutine[Any, Any, int]) -> int:
    """Run ``work`` between syncing the file's shared health stores and closing them, so a
    one-shot command sees circuits other processes opened and leaves what it learnt."""
    async with AsyncExitStack() as stack:
        await config.open_health(stack)
        code: int = await work
        return code


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


async def _answer(config: Config, name: str, prompt: str, args: argparse.Namespace) -> Result:
    agent = config.agents[name]
    keys = {"affinity": args.affinity, "split_key": args.split_key}
    if not args.stream:
        return await agent.run(prompt, timeout=args.timeout, **keys)
    wrote = False
    try:
        async with agent.stream(prompt, timeout=args.timeout, **keys) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, str) and chunk:  # tool-call deltas are not text
                    sys.stdout.write(chunk)
                    sys.stdout.flush()
                    wrote = True
            result = chunks.result
    finally:
        if wrote:  # end the line, also after a failure mid-stream: the prompt starts clean
            sys.stdout.write("\n")
    if not wrote and result.text:  # a reply the engine made itself (a Stop, best_effort)
        print(result.text)
    return result


async def _run_agent(config: Config, name: str, prompt: str, args: argparse.Namespace) -> int:
    try:
        result = await _answer(config, name, prompt, args)
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
    elif not args.stream:
        print(result.text)
    _attempts_table(args, result.attempts)
    return EXIT_OK


async def _run_workflow(
    config: Config, name: str, inputs: dict[str, str], args: argparse.Namespace
) -> int:
    from orchestrator.journal import JournalError
    from orchestrator.workflow import WorkflowError

    workflow = config.workflows[name]
    durable: dict[str, Any] = {}
    if args.run_id:
        durable = {
            "run_id": args.run_id,
            "journal": args.journal,
            "restart_changed": args.restart_changed,
            "on_interrupted": args.on_interrupted,
        }
    try:
        results = await asyncio.wait_for(workflow.run(inputs, **durable), args.timeout)
    except JournalError as exc:  # refused before anything was sent
        print(f"failover: workflow {name}: {exc}", file=sys.stderr)
        return EXIT_FAILED
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


def _attempts_table(args: argparse.Namespace, attempts: Sequence[Attempt]) -> None:
    """With rich tables on, every attempt of a run, on stderr: stdout keeps only the answer."""
    choice = args.tables or ("rich" if sys.stdout.isatty() else "plain")
    tables = Tables(choice, file=sys.stderr)
    if tables.rich and attempts and not args.json:
        styles = ["green" if a.ok else "red" for a in attempts]
        tables.table(ATTEMPT_HEADER, attempt_rows(attempts), title="attempts", styles=styles)
