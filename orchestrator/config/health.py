"""An agent's ``health:`` in the chain file: ``true``, or a store with its settings.

::

    agents:
      review:
        providers: [codex, claude]
        health: true                            # circuits in this process's memory
      shared:
        providers: [codex, claude]
        health:
          redis_url: "${REDIS_URL}"             # circuits shared by every process using it
          key_prefix: "failover:"
          circuit: {failure_ratio: 0.5, window: 30, min_calls: 100, cooldown: 30}
          budget: {ratio: 0.5, window: 10, min_per_second: 10}

The keys of ``circuit`` and ``budget`` are the fields of
:class:`~orchestrator.health.CircuitBreaker` and :class:`~orchestrator.health.RetryBudget`;
left out, they keep those classes' defaults (one rule, in one place: the classes
validate what the specs cannot, e.g. ``max_cooldown >= cooldown``). Without
``redis_url`` the store lives in the process's memory. Agents with the same
settings share one store. ``redis_url`` may hold a password: it is never printed.
"""

from __future__ import annotations

import importlib.util
from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from orchestrator.config.problems import ConfigError, Path
from orchestrator.config.scrub import EnvValues, constructor_problem
from orchestrator.config.source import Source
from orchestrator.config.spec import (
    Flag,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    Spec,
    given,
    value_problem,
)

__all__ = ["BudgetSpec", "CircuitSpec", "HealthSetting", "HealthSpec", "build_health"]

Fraction = Annotated[NonNegativeFloat, Field(le=1)]
_SCHEMES = ("redis://", "rediss://", "unix://")


class CircuitSpec(Spec):
    """``health.circuit``: when a provider's circuit opens and for how long."""

    failure_threshold: PositiveInt | None = None
    failure_ratio: Annotated[PositiveFloat, Field(le=1)] | None = None
    window: PositiveFloat | None = None
    min_calls: PositiveInt | None = None
    cooldown: NonNegativeFloat | None = None
    max_cooldown: NonNegativeFloat | None = None


class BudgetSpec(Spec):
    """``health.budget``: how many retries the process (or fleet) may make."""

    ratio: Fraction | None = None
    window: PositiveFloat | None = None
    min_per_second: NonNegativeFloat | None = None


class HealthSpec(Spec):
    """``health:`` as a mapping: where circuits live and their settings."""

    redis_url: str | None = None
    key_prefix: Annotated[str, Field(min_length=1)] | None = None
    sync_interval: PositiveFloat | None = None
    timeout: PositiveFloat | None = None
    replicas: PositiveInt | None = None  # processes sharing limits: the share while Redis is down
    circuit: CircuitSpec = CircuitSpec()
    budget: BudgetSpec = BudgetSpec()

    @field_validator("redis_url")
    @classmethod
    def _scheme(cls, url: str | None) -> str | None:
        if url is not None and not url.strip().startswith(_SCHEMES):
            raise value_problem("is not a redis://, rediss:// or unix:// URL")
        return url

    @model_validator(mode="after")
    def _shared_only(self) -> HealthSpec:
        if self.redis_url is None and (self.key_prefix or self.sync_interval or self.timeout):
            raise ValueError("key_prefix, sync_interval and timeout need redis_url")
        if self.redis_url is None and self.replicas:
            raise ValueError("replicas needs redis_url (one process's memory has no replicas)")
        return self


def _member(value: Any) -> str:
    return "<mapping>" if isinstance(value, dict) else "<true/false>"


#: ``health: true`` or ``health: {...}``. The tags name the union's members in pydantic's
#: error locations; ``validate`` drops them (they start with "<"), so an error points at
#: ``agents.NAME.health.circuit.window``, never at a member.
HealthSetting = Annotated[
    Annotated[Flag, Tag("<true/false>")] | Annotated[HealthSpec, Tag("<mapping>")],
    Discriminator(_member),
]


def _redis_missing(src: Source, path: Path) -> ConfigError:
    return src.error(
        (*path, "redis_url"),
        "a Redis health store needs the redis package: pip install 'failover-orchestrator[redis]'",
    )


def build_health(
    src: Source, path: Path, spec: bool | HealthSpec, env: EnvValues, made: dict[Any, Any]
) -> Any:
    """The store ``health:`` at ``path`` asks for (None for ``false``); stores already
    ``made`` for the same settings are shared."""
    if spec is False:
        return None
    if spec is True:
        return True
    if spec in made:
        return made[spec]
    from orchestrator.health import CircuitBreaker, MemoryHealthStore, RetryBudget

    try:
        circuit = CircuitBreaker(**given(**spec.circuit.model_dump()))
        budget = RetryBudget(**given(**spec.budget.model_dump()))
        if spec.redis_url is None:
            store: Any = MemoryHealthStore(circuit=circuit, budget=budget)
        else:
            if importlib.util.find_spec("redis") is None:
                raise _redis_missing(src, path)
            from orchestrator.health import RedisHealthStore

            extra = given(
                key_prefix=spec.key_prefix,
                sync_interval=spec.sync_interval,
                timeout=spec.timeout,
                replicas=spec.replicas,
            )
            store = RedisHealthStore(
                spec.redis_url.strip(), circuit=circuit, budget=budget, **extra
            )
    except (ValueError, TypeError) as exc:
        raise ConfigError([constructor_problem(src, path, exc, env)]) from None
    made[spec] = store
    return store
