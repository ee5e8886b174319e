"""Telemetry overhead: the CPU OpenTelemetry adds per healthy call.

A. No I/O (a no-op async FunctionProvider, as ``engine_overhead.py``): the CPU
   per ``FallbackAgent.run`` with ``opentelemetry-api`` installed but no SDK,
   minus the same without the API. Target: under 2 us.
B. S1 of ``providers_bench.py`` (healthy primary over loopback HTTP, sequential,
   the simulator in its own process): the CPU per call with the SDK installed
   (a ``TracerProvider`` with a ``BatchSpanProcessor``; its exporter drops the
   spans, so the figure is ours and the SDK's, not a wire format's), then with
   an SDK ``MeterProvider`` too, against telemetry off. Target for traces: at
   most 15% added to S1's CPU per call.
C. The floor under B: the engine's telemetry off, and the bare SDK making the
   same two spans (a run span, a CLIENT span current during the call, so the
   ``traceparent`` goes out) around each S1 call, with the attributes our spans
   carry, then with none. When C is as high as B, the cost is the SDK's.

Modes are interleaved batch by batch in one process (the machine is shared and
noisy: ratios hold, absolute times drift); the medians are reported.

    python bench/telemetry_overhead.py [--batches 40] [--calls 2000] [--rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import context, metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from orchestrator import FallbackAgent, Request
from orchestrator.telemetry import installed, spans
from orchestrator.telemetry.instruments import instruments_of
from providers import FunctionProvider, OpenAIChat

sys.path.insert(0, str(Path(__file__).parent))
from providers_bench import KEY, Sim

Call = Callable[[], Awaitable[object]]


class Dropped(SpanExporter):
    """Exports nowhere: what is measured is the engine, the SDK and the batch processor."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def cpu_per_call(fn: Call, calls: int) -> float:
    t0 = time.process_time_ns()
    for _ in range(calls):
        await fn()
    return (time.process_time_ns() - t0) / calls / 1000.0  # microseconds


async def interleaved(
    fn: Call, modes: dict[str, Callable[[], None]], batches: int, calls: int
) -> dict[str, float]:
    """Median CPU us per call of ``fn`` under each mode (each mode's setter run before)."""
    for set_mode in modes.values():  # warm up every path
        set_mode()
        await cpu_per_call(fn, max(20, calls // 10))
    runs: dict[str, list[float]] = {m: [] for m in modes}
    order = list(modes.items())
    gc.disable()
    try:
        for i in range(batches):
            # Alternate the order: whatever runs first after a collection pays for it.
            for mode, set_mode in order if i % 2 else order[::-1]:
                set_mode()
                runs[mode].append(await cpu_per_call(fn, calls))
            gc.collect()
    finally:
        gc.enable()
    return {m: statistics.median(v) for m, v in runs.items()}


def api_mode(present: bool) -> Callable[[], None]:
    def set_mode() -> None:
        installed._api = None if present else False

    return set_mode


def sdk_mode(traces: bool, meters: bool) -> Callable[[], None]:
    def set_mode() -> None:
        installed._api = None
        setattr(spans, "tracer_of", installed.tracer_of if traces else _none)  # noqa: B010
        setattr(spans, "instruments_of", instruments_of if meters else _none)  # noqa: B010
        spans._seen = (None, None, None, None)  # made again for the mode

    return set_mode


def _none(provider: Any = None) -> Any:
    return None


async def noop(request: Request) -> str:
    return "ok"


async def no_io(batches: int, calls: int) -> dict[str, float]:
    agent = FallbackAgent([FunctionProvider(noop, name="ok")], max_retries=2)
    request = Request("ping")

    async def call() -> object:
        return await agent.run(request)

    modes = {"no api": api_mode(False), "api, no sdk": api_mode(True)}
    return await interleaved(call, modes, batches, calls)


#: The attributes our spans of an S1 call carry (at start, then at the end).
_RUN_START = {"failover.agent.name": "s1"}
_RUN_END = {"failover.attempts": 1, "failover.outcome": "success", "failover.handled_by": "p"}
_ATTEMPT_START = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "m",
    "server.address": "127.0.0.1",
    "server.port": 8080,
    "failover.provider": "primary",
    "failover.attempt.number": 1,
}
_ATTEMPT_END = {
    "gen_ai.response.model": "m",
    "gen_ai.usage.input_tokens": 5,
    "gen_ai.usage.output_tokens": 2,
    "failover.decision": "success",
}


def bare_spans(tracer: Any, fn: Call, attributes: bool) -> Call:
    """``fn`` inside the two spans the engine would make, made by the bare SDK."""

    def attrs(given: dict[str, Any]) -> dict[str, Any] | None:
        return given if attributes else None

    async def call() -> object:
        run = tracer.start_span("failover s1", attributes=attrs(_RUN_START))
        outer = trace.set_span_in_context(run)
        kind = trace.SpanKind.CLIENT
        span = tracer.start_span(
            "chat m", context=outer, kind=kind, attributes=attrs(_ATTEMPT_START)
        )
        token = context.attach(trace.set_span_in_context(span, outer))
        try:
            return await fn()
        finally:
            context.detach(token)
            if attributes:
                span.set_attributes(_ATTEMPT_END)
                run.set_attributes(_RUN_END)
            span.end()
            run.end()

    return call


async def s1(rounds: int) -> dict[str, float]:
    trace.set_tracer_provider(provider := TracerProvider())
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    sim = Sim()
    try:
        sim.default("ok")
        agent = FallbackAgent(
            [OpenAIChat("m", base_url=sim.url + "/openai/v1", api_key=KEY, name="primary")],
            max_retries=0,
        )

        async def engine() -> object:
            return await agent.run("ping")

        bare = {
            True: bare_spans(provider.get_tracer("bare"), engine, True),
            False: bare_spans(provider.get_tracer("bare"), engine, False),
        }
        current: list[Call] = [engine]

        def mode(traces: bool, meters: bool, bare_with: bool | None = None) -> Callable[[], None]:
            engine_mode = sdk_mode(traces, meters)

            def set_mode() -> None:
                engine_mode()
                current[0] = engine if bare_with is None else bare[bare_with]

            return set_mode

        async def call() -> object:
            return await current[0]()

        modes = {
            "off": mode(False, False),
            "traces": mode(True, False),
            "traces+metrics": mode(True, True),
            "bare SDK, 2 spans": mode(False, False, True),
            "bare SDK, 2 spans, no attributes": mode(False, False, False),
        }
        return await interleaved(call, modes, rounds, 100)
    finally:
        sim.close()
        provider.shutdown()


async def main(batches: int, calls: int, rounds: int) -> None:
    a = await no_io(batches, calls)
    added = a["api, no sdk"] - a["no api"]
    print(f"A. no I/O, FallbackAgent.run without the API:   {a['no api']:7.2f} us CPU/call")
    print(f"   with opentelemetry-api, no SDK:            +{added:6.2f} us CPU/call (< 2)")
    b = await s1(rounds)
    off = b["off"]
    print(f"B. S1, telemetry off (no SDK):                 {off:7.1f} us CPU/call")
    for mode in ("traces", "traces+metrics"):
        pct = (b[mode] - off) / off * 100
        print(f"   SDK {mode + ':':<27}{b[mode]:10.1f} us CPU/call ({pct:+5.1f}%; traces <= 15%)")
    print("C. the floor: no engine telemetry, the bare SDK's two spans around each S1 call")
    for mode in ("bare SDK, 2 spans", "bare SDK, 2 spans, no attributes"):
        pct = (b[mode] - off) / off * 100
        print(f"   {mode + ':':<33}{b[mode]:8.1f} us CPU/call ({pct:+5.1f}%)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    asyncio.run(main(args.batches, args.calls, args.rounds))
