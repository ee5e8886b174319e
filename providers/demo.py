"""``failover demo``: the example chains against simulated providers, no API keys.

Starts :class:`providers.simulator.SimulatedServer` on loopback, scripts
faults into it and runs five scenes: the review chain (Codex -> Claude ->
Gemini; the first fails with 503s, the second with 529s), cost tiers with an
``accept=`` check, regions (nested chains, one region down), a workflow, and
a chain where everything is down. Retries and fallbacks are printed live from
the ``on_retry`` / ``on_fallback`` hooks; with ``rich`` on a terminal, as plain
lines otherwise. Retry delays are a few tens of milliseconds, so it runs in
about a second.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

from orchestrator import FallbackAgent
from orchestrator.cli.tables import ATTEMPT_HEADER, Tables, attempt_rows
from orchestrator.errors import FallbackError
from orchestrator.policy import RetryPolicy
from orchestrator.types import Result

__all__ = ["Printer", "command", "run_demo"]

KEY = "sim-demo-key"  # the simulator accepts any key; no real key is needed
DELAY = 0.05


class Printer:
    """Demo output: rich styles on a terminal, plain lines elsewhere."""

    def __init__(self, plain: bool | None = None) -> None:
        choice = None if plain is None else "plain" if plain else "rich"
        self.console: Any = Tables(choice).console  # None: plain lines

    def line(self, text: str, style: str = "") -> None:
        if self.console is not None:
            self.console.print(text, style=style or None, markup=False)
        else:
            print(text, flush=True)

    def title(self, text: str) -> None:
        self.line("")
        self.line(f"== {text} ==", "bold cyan")

    def hooks(self, prefix: str = "") -> dict[str, Any]:
        """``on_retry`` / ``on_fallback`` / ``on_all_failed`` that print as events happen."""
        tag = f"[{prefix}] " if prefix else ""

        def on_retry(name: str, attempt: int, error: BaseException, delay: float) -> None:
            self.line(
                f"  {tag}retry     {name}: attempt {attempt} failed ({_label(error)}); "
                f"retrying in {delay:.2f}s",
                "yellow",
            )

        def on_fallback(frm: str, to: str, error: BaseException) -> None:
            self.line(f"  {tag}fallback  {frm} -> {to} after {_label(error)}", "magenta")

        def on_all_failed(errors: list[BaseException]) -> None:
            self.line(f"  {tag}all failed after {len(errors)} error(s)", "red")

        return {"on_retry": on_retry, "on_fallback": on_fallback, "on_all_failed": on_all_failed}

    def result(self, result: Result) -> None:
        if self.console is not None:
            self._table(result)
        else:
            self._lines(result)
        cost = f", cost ${result.cost_usd:.6f}" if result.cost_usd is not None else ""
        self.line(
            f"  answered by {result.handled_by} after {len(result.attempts)} attempt(s) "
            f"in {result.latency:.2f}s{cost}: {result.text!r}",
            "bold green",
        )

    def _table(self, result: Result) -> None:
        from rich.table import Table

        table = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
        for column in ATTEMPT_HEADER:
            table.add_column(column, justify="right" if column in ("try", "ms") else "left")
        for a, row in zip(result.attempts, attempt_rows(result.attempts), strict=True):
            table.add_row(*row, style="green" if a.ok else "red")
        self.console.print(table)

    def _lines(self, result: Result) -> None:
        for agent, number, outcome, ms, cost in attempt_rows(result.attempts):
            cost = f"  {cost}" if cost else ""
            self.line(f"    attempt {agent}#{number}: {outcome}, {ms} ms{cost}", "dim")


def _label(error: BaseException) -> str:
    status = getattr(error, "status", None)
    return f"{type(error).__name__} {status}" if status else type(error).__name__


def _closed_port() -> int:
    """A loopback port with nothing listening: a region that is down."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def review_chain(sim: Any, out: Printer) -> str | None:
    """Codex -> Claude -> Gemini; Codex answers 503 three times, Claude 529 twice."""
    from providers import AnthropicMessages, Fault, GeminiGenerate, OpenAIChat

    out.title("review chain: codex -> claude -> gemini (codex 503s, claude 529s)")
    sim.script("openai", [Fault.status(503)] * 3)
    sim.script("anthropic", [Fault.overloaded()] * 2)
    agent = FallbackAgent(
        [
            OpenAIChat("gpt-5.4-mini", base_url=sim.openai_url, api_key=KEY, name="codex"),
            AnthropicMessages(
                "claude-sonnet-4-6", base_url=sim.anthropic_url, api_key=KEY, name="claude"
            ),
            GeminiGenerate("gemini-2.5-flash", base_url=sim.gemini_url, api_key=KEY, name="gemini"),
        ],
        name="review",
        max_retries=2,
        retry_delay=DELAY,
        policies={"claude": RetryPolicy(max_retries=1, delay=DELAY)},
        **out.hooks(),
    )
    result = await agent.run("Review this pull request: add retry to the uploader")
    out.result(result)
    return result.handled_by


async def cost_tiers(sim: Any, out: Printer) -> str | None:
    """Cheapest model first; ``accept=`` escalates a weak answer to the next tier."""
    from providers import AnthropicMessages, Fault, OpenAIChat

    out.title("cost tiers: gpt-5.4-mini -> gpt-5.4 -> claude-opus (accept= rejects weak answers)")
    sim.script(
        "openai",
        [Fault.ok("Not sure.", usage=(40, 3)), Fault.ok("I don't know.", usage=(40, 4))],
    )
    sim.script("anthropic", [Fault.ok("The cache key omits the tenant id.", usage=(40, 12))])

    def accept(result: Result) -> bool:
        weak = ("not sure", "don't know")
        return len(result.text) >= 20 and not any(w in result.text.lower() for w in weak)

    def openai(model: str, price: tuple[float, float]) -> OpenAIChat:
        return OpenAIChat(model, base_url=sim.openai_url, api_key=KEY, name=model, price=price)

    agent = FallbackAgent(
        [
            openai("gpt-5.4-mini", (0.75, 4.50)),
            openai("gpt-5.4", (2.50, 15.00)),
            AnthropicMessages(
                "claude-opus-4-6",
                base_url=sim.anthropic_url,
                api_key=KEY,
                name="claude-opus",
                price=(5.0, 25.0),
            ),
        ],
        name="cost-tiers",
        retry_delay=DELAY,
        accept=accept,
        **out.hooks(),
    )
    result = await agent.run("Why do users see each other's dashboards?")
    out.result(result)
    return result.handled_by


async def multi_region(sim: Any, out: Printer) -> str | None:
    """Nested chains: each vendor tries its home region first; us-east is down."""
    from providers import AnthropicMessages, OpenAIChat

    out.title("multi-region: [openai us-east -> eu-west] -> [anthropic us -> eu] (us-east down)")
    down = f"http://127.0.0.1:{_closed_port()}"
    hooks = out.hooks()
    openai = FallbackAgent(
        [
            OpenAIChat("gpt-5.4", base_url=f"{down}/openai/v1", api_key=KEY, name="openai-us-east"),
            OpenAIChat("gpt-5.4", base_url=sim.openai_url, api_key=KEY, name="openai-eu-west"),
        ],
        name="openai",
        max_retries=1,
        retry_delay=DELAY,
        **hooks,
    )
    anthropic = FallbackAgent(
        [
            AnthropicMessages(
                "claude-sonnet-4-6", base_url=sim.anthropic_url, api_key=KEY, name="anthropic-us"
            ),
            AnthropicMessages(
                "claude-sonnet-4-6", base_url=sim.anthropic_url, api_key=KEY, name="anthropic-eu"
            ),
        ],
        name="anthropic",
        max_retries=1,
        retry_delay=DELAY,
        **hooks,
    )
    agent = FallbackAgent([openai, anthropic], name="multi-region", max_retries=0, **hooks)
    result = await agent.run("Translate the release notes")
    out.result(result)
    return result.handled_by


async def workflow(sim: Any, out: Printer) -> str | None:
    """Two reviews in parallel, then a summary that uses both."""
    from orchestrator.workflow import Parallel, Phase, Step, Workflow
    from providers import AnthropicMessages, Fault, GeminiGenerate, OpenAIChat

    out.title("workflow: [correctness | security] in parallel, then summary (codex out of quota)")
    sim.set_default("openai", Fault.quota())

    def chain(name: str) -> FallbackAgent:
        return FallbackAgent(
            [
                OpenAIChat("gpt-5.4-mini", base_url=sim.openai_url, api_key=KEY, name="codex"),
                AnthropicMessages(
                    "claude-sonnet-4-6", base_url=sim.anthropic_url, api_key=KEY, name="claude"
                ),
                GeminiGenerate(
                    "gemini-2.5-flash", base_url=sim.gemini_url, api_key=KEY, name="gemini"
                ),
            ],
            name=name,
            max_retries=1,
            retry_delay=DELAY,
            **out.hooks(name),
        )

    flow = Workflow(
        Phase(
            "Review",
            Parallel(
                Step("correctness", chain("correctness"), prompt="Find bugs in: {input}"),
                Step("security", chain("security"), prompt="Find security issues in: {input}"),
            ),
        ),
        Phase(
            "Summary",
            Step(
                "summary",
                chain("summary"),
                prompt="Summarise: {correctness.text} / {security.text}",
            ),
        ),
        name="pr-review",
    )
    results = await flow.run("the uploader patch")
    for step, result in results.items():
        out.line(f"  step {step}: answered by {result.handled_by}: {result.text!r}", "green")
    return results["summary"].handled_by


async def all_down(sim: Any, out: Printer) -> str | None:
    """Every provider fails: the FallbackError lists every attempt."""
    from providers import AnthropicMessages, Fault, OpenAIChat

    out.title("everything down: FallbackError with every attempt")
    sim.script("openai", [Fault.server_error(500)] * 2)
    sim.script("anthropic", [Fault.auth(401)])
    agent = FallbackAgent(
        [
            OpenAIChat("gpt-5.4-mini", base_url=sim.openai_url, api_key=KEY, name="codex"),
            AnthropicMessages(
                "claude-sonnet-4-6", base_url=sim.anthropic_url, api_key=KEY, name="claude"
            ),
        ],
        name="doomed",
        max_retries=1,
        retry_delay=DELAY,
        **out.hooks(),
    )
    try:
        await agent.run("anything")
    except FallbackError as exc:
        out.line(f"  FallbackError: {exc}", "bold red")
        return None
    return "unexpected success"


Scene = Callable[[Any, Printer], Awaitable["str | None"]]
#: (scene, the provider expected to answer) in the order they run.
SCENES: tuple[tuple[Scene, str | None], ...] = (
    (review_chain, "gemini"),
    (cost_tiers, "claude-opus"),
    (multi_region, "openai-eu-west"),
    (workflow, "claude"),
    (all_down, None),
)


async def _main(out: Printer) -> int:
    from providers import SimulatedServer

    started = time.perf_counter()
    wrong = []
    async with SimulatedServer() as sim:
        out.line(f"simulated OpenAI / Anthropic / Gemini providers on {sim.url} (no API keys)")
        for scene, expected in SCENES:
            sim.reset()
            got = await scene(sim, out)
            if got != expected:
                wrong.append(f"{scene.__name__}: answered by {got}, expected {expected}")
    out.line("")
    for problem in wrong:
        out.line(f"unexpected: {problem}", "bold red")
    out.line(f"{len(SCENES)} scenes in {time.perf_counter() - started:.2f}s", "bold")
    return 1 if wrong else 0


def run_demo(*, plain: bool | None = None) -> int:
    """Run every scene; 0 when each was answered by the provider it should have been."""
    return asyncio.run(_main(Printer(None if not plain else True)))


class _Demo:
    """``failover demo``: the plug-in command (see :mod:`orchestrator.cli.plugins`)."""

    help = "run the example chains against simulated providers (no API keys)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--plain", action="store_true", help="plain lines even on a terminal")

    def run(self, args: argparse.Namespace) -> int:
        return run_demo(plain=args.plain)


command = _Demo()
