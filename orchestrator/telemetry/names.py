"""The names telemetry uses: OpenTelemetry GenAI attributes and metrics, and ours (``failover.*``).

One place for every span attribute, metric and label name, so the docs (observability.md), the
spans, the metrics and the tests cannot drift apart. GenAI names follow the
OpenTelemetry semantic conventions for generative AI clients.
"""

from __future__ import annotations

__all__ = [
    "DECISIONS",
    "OUTCOMES",
    "SCOPE",
]

#: The instrumentation scope (tracer and meter name).
SCOPE = "failover-orchestrator"

# -- GenAI (OpenTelemetry semantic conventions) -------------------------------------------

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TOKEN_TYPE = "gen_ai.token.type"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
#: The region or location a provider runs in (OpenTelemetry's cloud resource attribute).
CLOUD_REGION = "cloud.region"
ERROR_TYPE = "error.type"

# -- ours ------------------------------------------------------------------------------------

AGENT_NAME = "failover.agent.name"
OUTCOME = "failover.outcome"
HANDLED_BY = "failover.handled_by"
ATTEMPTS = "failover.attempts"
PROVIDER = "failover.provider"
ATTEMPT_NUMBER = "failover.attempt.number"
DECISION = "failover.decision"
REASON = "failover.reason"
RETRY_AFTER = "failover.retry_after"
HEDGE = "failover.hedge"
COST_USD = "failover.cost_usd"
#: True when the span's tokens and cost are estimated (a hedge's loser reported none).
USAGE_ESTIMATED = "failover.usage.estimated"
FROM = "failover.from"
#: A routed run: the children in the order it tried them, and its split arm.
ORDER = "failover.order"
ARM = "failover.arm"
TO = "failover.to"

#: ``failover.outcome`` of a run span.
OUTCOMES = ("success", "failed", "stopped", "best_effort")
#: ``failover.decision`` of an attempt span: what the engine did after it
#: (``hedge_lost``: cancelled because a parallel hedged attempt produced content first).
DECISIONS = ("success", "retry", "fallback", "stop", "hedge_lost")

#: The run span's event for a child skipped without a request (circuit open...).
SKIPPED_EVENT = "failover.skipped"

# -- metrics ---------------------------------------------------------------------------------

METRIC_DURATION = "gen_ai.client.operation.duration"
METRIC_TOKENS = "gen_ai.client.token.usage"
METRIC_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
METRIC_ATTEMPTS = "failover.attempts"
METRIC_FALLBACKS = "failover.fallbacks"
METRIC_COST = "failover.cost"
METRIC_CIRCUIT = "failover.circuit.state"
METRIC_CAPACITY = "failover.capacity.used"
METRIC_BUDGET = "failover.budget.spent"
#: ``failover.capacity.used``'s labels: the limiter (a provider's name, ``gateway-key:<id>``)
#: and what is counted (``rpm``: requests in the window, ``tpm``: tokens, ``concurrency``).
LIMITER = "failover.limiter"
CAPACITY_KIND = "failover.capacity.kind"
#: ``failover.budget.spent``'s label: ``agent:<name>``, ``provider:<name>``,
#: ``gateway-key:<id>``.
BUDGET_SCOPE = "failover.budget.scope"

#: ``failover.circuit.state`` values.
CIRCUIT_STATES = {"closed": 0, "half_open": 1, "open": 2}

#: Bucket boundaries the GenAI conventions advise (seconds; tokens).
DURATION_BUCKETS = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
TOKEN_BUCKETS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
