"""OpenTelemetry traces and metrics for every run and attempt, and a Prometheus exposition.

Install the extra (``pip install 'failover-orchestrator[otel]'``) and an SDK in
the application; the library emits through the *global* tracer and meter
providers (no-ops until the application installs them), as libraries do:

- a span per run, ``failover {agent}`` (``failover.agent.name``,
  ``failover.outcome``, ``failover.handled_by``, ``failover.attempts``), a nested
  chain's run span a child of the outer one's;
- a CLIENT span per upstream request, ``{gen_ai.operation.name}
  {gen_ai.request.model}``, with the GenAI attributes and ``failover.provider``,
  ``failover.attempt.number``, ``failover.decision`` (``success``, ``retry``,
  ``fallback``, ``stop``), ``failover.reason``, ``failover.retry_after``,
  ``failover.cost_usd``, ``failover.hedge``; a child skipped without a request
  is a ``failover.skipped`` event on the run span;
- ``traceparent`` on the providers' HTTP requests while an attempt span is current;
- metrics: ``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage``,
  ``gen_ai.client.operation.time_to_first_chunk``, ``failover.attempts``,
  ``failover.fallbacks``, ``failover.cost``, ``failover.circuit.state``.

Names live in :mod:`orchestrator.telemetry.names`; how a provider describes
itself (``gen_ai_provider_name``, ``model``, ``base_url``) in
:mod:`orchestrator.telemetry.describe`. Prompts and replies are never recorded
unless ``FallbackAgent(capture_content=True)``. Importing this package does not
import OpenTelemetry.
"""

from __future__ import annotations

from orchestrator.telemetry.prometheus import EXPOSITION_CONTENT_TYPE, prometheus_exposition
from orchestrator.telemetry.propagation import trace_headers

__all__ = ["EXPOSITION_CONTENT_TYPE", "prometheus_exposition", "trace_headers"]
