"""Faults an independent failover benchmark uses that the core set lacks.

``BenchmarkFault.reset()`` (the connection dropped before any header),
``BenchmarkFault.unterminated()`` (a complete stream, usage included, without its
terminator, optionally held open); a model refusing a prefill is the core
``Fault.no_prefill()``. They are
:class:`~providers.simulator.faults.Fault` values like the others: scripted the same way,
``from_spec`` builds them (``{"reset": null}``), docs/fault-scripts.md lists them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from orchestrator.units import seconds
from providers.simulator import faults
from providers.simulator.faults import Fault
from providers.simulator.http11 import Exchange
from providers.simulator.script import FAULT_FACTORIES
from providers.simulator.wires.base import Call, Wire, reply_text, split_text, token_usage

__all__ = ["BENCHMARK_KINDS", "BenchmarkFault", "benchmark_reply"]

BENCHMARK_KINDS = frozenset({"reset", "unterminated"})
Respond = Callable[[Exchange, Wire, Call, Fault], "Coroutine[Any, Any, None] | None"]


class BenchmarkFault:
    """Factories of the benchmark's faults (each returns a :class:`Fault`)."""

    @staticmethod
    def reset() -> Fault:
        """Accept the request, then drop the connection before any header (a TCP reset)."""
        return Fault("reset")

    @staticmethod
    def unterminated(
        hold: float = 0.0, *, text: str | None = None, usage: Sequence[int] | None = None
    ) -> Fault:
        """Streamed: every event of a complete reply (text, finish reason, usage) but the
        terminator (OpenAI ``[DONE]``, Anthropic ``message_stop``...), then the connection
        stays open ``hold`` seconds before the reply ends. Not streamed: a normal reply."""
        seconds(hold, "BenchmarkFault.unterminated: hold", allow_zero=True)
        return Fault("unterminated", seconds=hold, text=text, usage=faults._usage(usage))


def benchmark_reply(
    ex: Exchange, wire: Wire, call: Call, fault: Fault, respond: Respond
) -> Coroutine[Any, Any, None] | None:
    """Answer ``call`` as the benchmark fault ``fault`` says (``respond`` renders the others)."""
    if fault.kind == "reset":
        ex.abort()
        return None
    if not call.stream:
        return respond(ex, wire, call, Fault.ok(fault.text, usage=fault.usage))
    return _unterminated(ex, wire, call, fault)


async def _unterminated(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> None:
    text = reply_text(call, fault.text)
    events = wire.stream(
        call, split_text(text, 3), token_usage(call, text, fault.usage), terminate=True
    )
    ex.start_stream(
        200, {"Content-Type": wire.stream_content_type(call), "Cache-Control": "no-cache"}
    )
    ex.write_chunk(b"".join(events[:-1]))  # all but the terminator
    if fault.seconds > 0:
        await asyncio.sleep(fault.seconds)
    ex.end_stream()


# from_spec builds these by name like the core faults.
FAULT_FACTORIES.update({k: getattr(BenchmarkFault, k) for k in sorted(BENCHMARK_KINDS)})
