"""The simulator as a command: ``failover simulate`` and ``python -m providers.simulator``.

``command`` is the ``failover.commands`` entry point (see
:mod:`orchestrator.cli.plugins`); ``main(argv)`` is the same command on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import signal
import sys

from providers.simulator.faults import Fault
from providers.simulator.script import load_script
from providers.simulator.server import SimulatedServer

__all__ = ["command", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options: where to listen and which faults to script."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8787, help="port (0 = any free one)")
    parser.add_argument("--script", help="JSON file: route -> list of fault specs")


async def _serve(sim: SimulatedServer) -> None:
    await sim.start()
    print(f"simulated provider server on {sim.url}", flush=True)
    print(f"  openai     {sim.openai_url}", flush=True)
    print(f"  responses  {sim.openai_url}/responses", flush=True)
    print(f"  anthropic  {sim.anthropic_url}", flush=True)
    print(f"  gemini     {sim.gemini_url}", flush=True)
    print(f"  http       {sim.http_url}", flush=True)
    print(f"  bedrock    {sim.bedrock_url}", flush=True)
    print("point unchanged code and chain files here (any key will do):", flush=True)
    for var, value in sim.environment().items():
        print(f"  export {var}={shlex.quote(value)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await sim.stop()


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; 0 on a clean stop, 1 when it cannot listen,
    2 on a bad script file."""
    scripts: dict[str, list[Fault]] = {}
    defaults: dict[str, Fault] = {}
    if args.script:
        try:
            scripts, defaults = load_script(args.script)
        except (OSError, ValueError) as exc:
            print(f"error: --script {args.script}: {exc}", file=sys.stderr)
            return 2
    sim = SimulatedServer(host=args.host, port=args.port, script=scripts, defaults=defaults)
    try:
        asyncio.run(_serve(sim))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


class _Simulate:
    """``failover simulate``: the plug-in command (help, options, run)."""

    help = "run the simulated provider server"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run(args)


command = _Simulate()


def main(argv: list[str] | None = None) -> int:
    """``python -m providers.simulator``: parse ``argv`` and run the server."""
    parser = argparse.ArgumentParser(
        prog="python -m providers.simulator",
        description="Simulated OpenAI/Anthropic/Gemini server with scripted faults.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
