"""Metrics overhead: the CPU all metric records of one call add, with the gateway's meter provider.

A ``FallbackAgent`` over a no-op function provider that reports usage and cost (so
every metric is recorded: attempts, duration, input and output tokens, cost), run
with an SDK ``MeterProvider`` read by a ``PrometheusMetricReader`` (what
``failover serve`` installs) and with the engine's metrics off, interleaved batch
by batch; the difference of the medians is the metrics' CPU per call (issue 22's
target: at most 10 us). Traces stay off in both.

    python bench/metrics_overhead.py [--batches 30] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import Any

from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider

from orchestrator import FallbackAgent, Request, Response, Usage
from orchestrator.telemetry import prometheus_exposition, spans
from orchestrator.telemetry.instruments import instruments_of
from providers import FunctionProvider

_instruments = instruments_of


async def reply(request: Request) -> Response:
    return Response("ok", usage=Usage(5, 2), cost_usd=0.0001)


def _none(provider: Any = None) -> Any:
    return None


async def main(batches: int, calls: int) -> None:
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    agent = FallbackAgent([FunctionProvider(reply, name="fn")], tracing=False)
    request = Request("ping")
    samples: dict[str, list[float]] = {"metrics off": [], "metrics on": []}
    for _ in range(batches):
        for mode, made in (("metrics off", _none), ("metrics on", _instruments)):
            setattr(spans, "instruments_of", made)  # noqa: B010 (what spans calls)
            spans._seen = (None, None, None, None)  # made again for the mode
            gc.collect()
            t0 = time.process_time_ns()
            for _ in range(calls):
                await agent.run(request)
            samples[mode].append((time.process_time_ns() - t0) / calls / 1000)
    setattr(spans, "instruments_of", _instruments)  # noqa: B010
    spans._seen = (None, None, None, None)
    assert b"failover_attempts_total" in (prometheus_exposition() or b"")
    off, on = (statistics.median(samples[m]) for m in ("metrics off", "metrics on"))
    print(f"engine CPU per call: metrics off {off:.1f} us, on {on:.1f} us")
    print(f"metrics: {on - off:.1f} us per call (median of {batches} batches of {calls})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(main(args.batches, args.calls))
