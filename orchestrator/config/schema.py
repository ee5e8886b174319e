"""The chain file's own schema as pydantic models (unknown keys are errors).

These models only validate shapes and values; ``build`` turns them into
``FallbackAgent`` s and workflows and checks references. Each provider
entry is validated by its type's own spec (see ``registry`` and ``spec``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from orchestrator.config.health import HealthSetting
from orchestrator.config.problems import Path
from orchestrator.config.spec import (
    BudgetSpec,
    Flag,
    ImportPath,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PolicySpec,
    PositiveFloat,
    PositiveInt,
    ProviderSpec,
    Spec,
)

__all__ = [
    "AffinitySpec",
    "AgentSpec",
    "ChainSpec",
    "ChildSpec",
    "FileSpec",
    "GatewaySpec",
    "PhaseSpec",
    "StepSpec",
    "WorkflowSpec",
]


class ChildSpec(PolicySpec):
    """One entry of an agent's ``providers``: a name, ``{ref: name, ...}`` or ``{agent: name}``."""

    ref: Name | None = None
    agent: Name | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"ref": data}
        if not isinstance(data, dict):
            raise ValueError(
                f"{data!r} is not a provider name or a mapping like "
                "{ref: NAME, max_retries: 1} or {agent: NAME}"
            )
        return data

    @model_validator(mode="after")
    def _one_target(self) -> ChildSpec:
        if (self.ref is None) == (self.agent is None):
            raise ValueError(
                "give exactly one of ref: PROVIDER_OR_AGENT or agent: AGENT"
                if self.ref is None
                else "ref and agent are both set; keep one"
            )
        return self

    @property
    def target(self) -> str:
        return self.ref if self.ref is not None else str(self.agent)


class AffinitySpec(Spec):
    """``affinity:``: how long a key stays with the child that served it, without calls."""

    ttl: PositiveFloat = 600.0


class AgentSpec(PolicySpec):
    providers: Annotated[list[ChildSpec], Field(min_length=1)]
    # Routing (orchestrator.routing): who goes first. ``split``: arm name -> weight, one arm
    # per provider in the same order (the agent is then a Split).
    order: Literal["priority", "weighted", "least_busy", "latency", "cost"] = "priority"
    weights: dict[Name, NonNegativeFloat] | None = None
    split: dict[Name, NonNegativeFloat] | None = None
    affinity: AffinitySpec | None = None
    timeout: PositiveFloat | None = None
    attempt_timeout: PositiveFloat | None = None
    first_token_timeout: PositiveFloat | None = None
    idle_timeout: PositiveFloat | None = None
    hedge_after: PositiveFloat | str | None = "auto"  # seconds, "p95", "auto"; null: off
    max_hedges: PositiveInt = 1
    schema_retries: NonNegativeInt | None = None
    mid_stream: Literal["raise", "continue"] = "continue"
    escalate_on_guardrail: Flag = False
    tracing: Flag = True  # OpenTelemetry spans for this agent (when an SDK is installed)
    capture_content: Flag = False  # prompts and replies on its spans: opt-in
    health: HealthSetting = False
    budget: BudgetSpec | None = None  # the chain's spend (orchestrator.Budget)
    wait_for_capacity: PositiveFloat | None = None
    retry_on: list[ImportPath] | None = None
    fallback_on: list[ImportPath] | None = None
    on_fallback: ImportPath | None = None
    on_retry: ImportPath | None = None
    on_all_failed: ImportPath | None = None
    before_fallback: ImportPath | None = None
    accept: ImportPath | None = None
    best_effort: ImportPath | None = None


class StepSpec(Spec):
    name: Name
    agent: Name
    prompt: str | None = None
    continue_on_error: Flag = False
    #: In a journaled run (``--run-id``): refuse a step a crash caught mid-call, or rerun it.
    on_interrupted: Literal["rerun", "fail"] | None = None
    #: In a journaled run: stream the step and continue from its journaled text after a crash.
    mid_stream: Literal["continue"] | None = None


class PhaseSpec(Spec):
    name: Name
    steps: Annotated[list[StepSpec], Field(min_length=1)]
    parallel: Flag = False
    limit: PositiveInt | None = None


class WorkflowSpec(Spec):
    phases: Annotated[list[PhaseSpec], Field(min_length=1)]


class GatewaySpec(Spec):
    """``gateway:``, read by ``failover serve``: ``keys_file`` holds hashed client keys
    (relative to the chain file)."""

    keys_file: Annotated[str, Field(min_length=1)] | None = None


class FileSpec(Spec):
    providers: dict[Name, dict[str, Any]] = Field(default_factory=dict)
    agents: dict[Name, AgentSpec] = Field(default_factory=dict)
    workflows: dict[Name, WorkflowSpec] = Field(default_factory=dict)
    gateway: GatewaySpec | None = None
    #: Where the workflows journal their runs (``failover run --run-id``): a path (relative
    #: to this file), ``sqlite:///PATH``, ``postgresql://...`` or ``dbos+postgresql://...``.
    journal: Annotated[str, Field(min_length=1, max_length=2000)] | None = None


@dataclass(frozen=True)
class ChainSpec:
    """A validated chain file: each provider entry validated by its type's spec.

    An entry with ``regions:`` is one provider per region (``name@region``):
    ``groups`` maps the entry's name to theirs, in order, and ``origins`` each of
    them to its item in the list (where its errors are located).
    """

    providers: dict[str, ProviderSpec]
    agents: dict[str, AgentSpec]
    workflows: dict[str, WorkflowSpec]
    gateway: GatewaySpec | None = None
    journal: str | None = None
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    origins: dict[str, Path] = field(default_factory=dict)
