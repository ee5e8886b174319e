"""Config value objects, the public surface and the process default store."""

from __future__ import annotations

import dataclasses
import types
from datetime import timedelta

import pytest

import orchestrator.health as health
from orchestrator.health import (
    Admission,
    CircuitBreaker,
    HealthStore,
    MemoryHealthStore,
    RedisHealthStore,
    RetryBudget,
    default_health_store,
    reset_default_health_store,
)


def test_all_lists_exactly_the_public_names() -> None:
    # Submodules (model, machine, memory, redis) are the package's files, not its names.
    public = {
        n
        for n in dir(health)
        if not n.startswith("_")
        and n != "annotations"
        and not isinstance(getattr(health, n), types.ModuleType)
    }
    assert set(health.__all__) == public


def test_circuit_defaults_and_timedelta() -> None:
    c = CircuitBreaker()
    # The issue changed the defaults: evidence over a window, not 3 failures in a row.
    assert (c.failure_threshold, c.failure_ratio, c.window, c.min_calls, c.cooldown) == (
        None,
        0.5,
        30.0,
        100,
        30.0,
    )
    assert c.max_cooldown == 600.0
    c = CircuitBreaker(window=timedelta(minutes=2), cooldown=timedelta(milliseconds=1500))
    assert (c.window, c.cooldown) == (120.0, 1.5)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"cooldown": -1}, "cooldown=-1"),
        ({"cooldown": 0}, "cooldown=0"),
        ({"window": float("inf")}, "window=inf"),
        ({"failure_threshold": 0}, "failure_threshold=0"),
        ({"failure_ratio": 1.5}, "failure_ratio=1.5"),
        ({"failure_ratio": 0}, "failure_ratio=0"),
        ({"min_calls": 0}, "min_calls=0"),
        ({"failure_threshold": None, "failure_ratio": None}, "failure_threshold=None"),
        ({"max_cooldown": 10}, "max_cooldown=10"),
    ],
)
def test_circuit_errors_name_argument_value_and_fix(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match="CircuitBreaker") as info:
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]
    assert needle in str(info.value)
    assert "must" in str(info.value) or "set at least" in str(info.value)


def test_time_of_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"cooldown='30'.*timedelta"):
        CircuitBreaker(cooldown="30")  # type: ignore[arg-type]


def test_budget_formula_and_validation() -> None:
    b = RetryBudget()
    # The default ratio is 0.5 (was 0.2): it must cover a 30%-flaky provider's retries.
    assert (b.ratio, b.window, b.min_per_second) == (0.5, 10.0, 10.0)
    assert b.allowance(0) == 100.0
    assert b.allowance(1000) == pytest.approx(600.0)
    assert RetryBudget(ratio=0.5, window=timedelta(seconds=2), min_per_second=0).allowance(4) == 2
    with pytest.raises(ValueError, match=r"ratio=-0.1"):
        RetryBudget(ratio=-0.1)
    with pytest.raises(ValueError, match=r"min_per_second=-1"):
        RetryBudget(min_per_second=-1)


def test_values_are_frozen_and_slotted() -> None:
    a = Admission(True, False, "closed", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.allowed = False  # type: ignore[misc]
    assert not hasattr(a, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        CircuitBreaker().cooldown = 1  # type: ignore[misc]


def test_stores_satisfy_the_protocol() -> None:
    assert isinstance(MemoryHealthStore(), HealthStore)
    assert isinstance(RedisHealthStore("redis://127.0.0.1:1"), HealthStore)


def test_default_store_is_one_per_process_and_resettable() -> None:
    reset_default_health_store()
    first = default_health_store()
    assert default_health_store() is first
    first.record_failure("p")
    reset_default_health_store()
    second = default_health_store()
    assert second is not first
    assert second.snapshot("p").consecutive_failures == 0


def test_redis_url_is_validated_and_password_never_shown() -> None:
    with pytest.raises(ValueError, match="redis://"):
        RedisHealthStore("http://localhost:6379")
    store = RedisHealthStore("redis://user:hunter2@127.0.0.1:6379/0")
    assert "hunter2" not in repr(store)
    assert "***" in repr(store)
