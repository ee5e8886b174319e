"""The engine's stop conditions: named, composed with ``|``, each saying why it stopped."""

from __future__ import annotations

import random

import pytest
from tenacity import RetryCallState, Retrying

from orchestrator import FallbackAgent
from orchestrator.engine.retrying import (
    stop_after_attempt,
    stop_before_deadline,
    stop_first_of,
    stop_if_budget_empty,
    stop_if_circuit_open,
    stop_if_schema_retries_spent,
)
from orchestrator.errors import ServerError
from orchestrator.health import CircuitBreaker, MemoryHealthStore, RetryBudget
from orchestrator.policy import RetryPolicy
from orchestrator.testing import FakeClock
from tests.conftest import Scripted


def state(attempt_number: int, upcoming_sleep: float = 0.0) -> RetryCallState:
    s = RetryCallState(Retrying(), None, (), {})
    s.attempt_number, s.upcoming_sleep = attempt_number, upcoming_sleep
    return s


class CountingStore(MemoryHealthStore):
    """A store that counts the budget tokens asked for."""

    asked = 0

    def try_acquire_retry(self) -> bool:
        self.asked += 1
        return super().try_acquire_retry()


def budget_store(clock: FakeClock, ratio: float = 1.0, per_second: float = 1000) -> CountingStore:
    return CountingStore(
        budget=RetryBudget(ratio=ratio, min_per_second=per_second),
        circuit=CircuitBreaker(failure_threshold=100),
        clock=clock,
    )


def test_the_first_condition_that_fires_names_itself_and_its_note(clock: FakeClock) -> None:
    invalid = [0]
    stop = (
        stop_after_attempt(3)
        | stop_if_schema_retries_spent(1, lambda: invalid[0])
        | stop_before_deadline(10.0, clock.now)
    )
    assert isinstance(stop, stop_first_of) and len(stop.conditions) == 3
    assert not stop(state(1, upcoming_sleep=2.0)) and stop.stopped_by is None
    assert stop(state(2, upcoming_sleep=10.0))
    assert stop.stopped_by is stop.conditions[2]
    assert stop.stopped_by.note == "backoff would end past the run's deadline"
    invalid[0] = 2
    assert stop(state(2)) and stop.stopped_by.note == "schema_retries spent"
    assert stop(state(3)) and stop.stopped_by.note is None  # attempt numbers say it
    assert repr(stop).startswith("stop_after_attempt(3) | stop_if_schema_retries_spent()")


def test_circuit_and_budget_conditions_say_why(clock: FakeClock) -> None:
    store = budget_store(clock, ratio=0.0, per_second=0.0)
    assert stop_if_budget_empty(store)(state(1))
    assert stop_if_budget_empty(store).note == "retry budget empty"
    assert not stop_if_circuit_open(store, "p")(state(1))
    assert stop_if_circuit_open(store, "p").note == "circuit open: no more retries"


def test_the_budget_is_asked_only_when_every_other_condition_lets_the_retry_go(
    clock: FakeClock,
) -> None:
    store = budget_store(clock)
    stop = (
        stop_after_attempt(3) | stop_before_deadline(5.0, clock.now) | stop_if_budget_empty(store)
    )
    assert stop(state(3)) and stop(state(1, upcoming_sleep=6.0))
    assert store.asked == 0
    assert not stop(state(1, upcoming_sleep=1.0))
    assert store.asked == 1


def test_a_condition_that_spends_must_come_last(clock: FakeClock) -> None:
    store = budget_store(clock)
    with pytest.raises(ValueError, match="must come last"):
        stop_if_budget_empty(store) | stop_after_attempt(3)
    with pytest.raises(ValueError, match="must come last"):
        (stop_after_attempt(3) | stop_if_budget_empty(store)) | stop_after_attempt(4)
    with pytest.raises(TypeError, match="only combines with \\|"):
        stop_after_attempt(3) & stop_if_budget_empty(store)


async def test_a_retry_stopped_by_the_deadline_spends_no_budget_token(clock: FakeClock) -> None:
    store = budget_store(clock)
    primary = Scripted("primary", [ServerError("down")])
    agent = FallbackAgent(
        [primary, Scripted("backup", ["ok"])],
        max_retries=3,
        retry_delay=2.0,
        timeout=5.0,
        health=store,
        hedge_after=None,  # a hedge takes a budget token too: only the retries here
        clock=clock,
    )
    result = await agent.run("x")
    # Retry 1 (2 s) fits and takes a token; retry 2 (4 s more) would end past 5 s.
    assert primary.calls == 2 and store.asked == 1
    assert result.attempts[1].note == "backoff would end past the run's deadline"


@pytest.mark.parametrize("strategy", ["exponential", "linear", "none"])
@pytest.mark.parametrize("jitter", [None, "full"])
def test_backoff_is_the_schedule_the_engine_sleeps_by(strategy: str, jitter: str | None) -> None:
    policy = RetryPolicy(strategy=strategy, delay=1.5, max_delay=10.0, jitter=jitter)
    wait = policy.wait_strategy(random.Random(7))
    drawn = random.Random(7)
    for n in range(1, 8):
        assert policy.backoff(n, drawn) == wait(state(n))


def test_backoff_of_a_late_retry_is_capped_not_an_overflow() -> None:
    assert RetryPolicy(delay=1.0, max_delay=60.0).backoff(5000) == 60.0
