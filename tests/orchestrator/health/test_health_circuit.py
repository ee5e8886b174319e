"""The circuit state machine and the retry budget on fake time (MemoryHealthStore)."""

from __future__ import annotations

import threading
import tracemalloc

import pytest

from orchestrator.health import CircuitBreaker, MemoryHealthStore, RetryBudget
from orchestrator.testing import FakeClock, capture_events


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, **kwargs: object) -> MemoryHealthStore:
    # These tests drive the consecutive-failure rule; it is off by default since the ratio
    # rule became the default, so they name it explicitly.
    kwargs.setdefault("failure_threshold", 3)
    return MemoryHealthStore(circuit=CircuitBreaker(**kwargs), clock=clock)  # type: ignore[arg-type]


def fail(store: MemoryHealthStore, n: int, provider: str = "p") -> None:
    for _ in range(n):
        store.record_failure(provider)


def test_closed_admits_without_probe(clock: FakeClock) -> None:
    a = make(clock).admit("p")
    assert (a.allowed, a.probe, a.state, a.open_until) == (True, False, "closed", None)


def test_three_consecutive_failures_open_for_cooldown(clock: FakeClock) -> None:
    store = make(clock)
    fail(store, 2)
    assert store.admit("p").allowed
    fail(store, 1)
    a = store.admit("p")
    assert (a.allowed, a.probe, a.state) == (False, False, "open")
    assert a.open_until == pytest.approx(clock.wall() + 30.0)
    snap = store.snapshot("p")
    assert (snap.state, snap.consecutive_failures, snap.open_until) == ("open", 3, a.open_until)
    assert store.admit("other").allowed  # circuits are per provider


def test_a_success_resets_the_streak(clock: FakeClock) -> None:
    store = make(clock)
    fail(store, 2)
    store.record_success("p")
    fail(store, 2)
    assert store.admit("p").state == "closed"
    assert store.snapshot("p").consecutive_failures == 2


def test_one_probe_after_cooldown_and_success_closes(clock: FakeClock) -> None:
    store = make(clock)
    with capture_events() as logs:
        fail(store, 3)
        clock.advance(29.9)
        assert not store.admit("p").allowed
        clock.advance(0.1)
        probe = store.admit("p")
        assert (probe.allowed, probe.probe, probe.state) == (True, True, "half_open")
        for _ in range(5):
            other = store.admit("p")
            assert (other.allowed, other.state) == (False, "half_open")
        store.record_success("p")
        assert store.admit("p") == store.admit("q")  # closed again
    names = [(e["event"], e.get("reason")) for e in logs if e["event"].startswith("circuit_")]
    assert names == [
        ("circuit_opened", "consecutive_failures"),
        ("circuit_half_open", "cooldown_over"),
        ("circuit_closed", "probe_succeeded"),
    ]
    opened = next(e for e in logs if e["event"] == "circuit_opened")
    assert opened["provider"] == "p"
    assert opened["state"] == "open"
    assert opened["open_until"] == pytest.approx(clock.epoch + 30.0)


def test_failed_probe_reopens_for_a_fresh_cooldown(clock: FakeClock) -> None:
    store = make(clock, cooldown=10.0)
    fail(store, 3)
    clock.advance(10)
    assert store.admit("p").probe
    with capture_events() as logs:
        store.record_failure("p")
    a = store.admit("p")
    assert (a.allowed, a.state) == (False, "open")
    assert a.open_until == pytest.approx(clock.wall() + 10.0)
    assert [e["reason"] for e in logs] == ["probe_failed"]
    clock.advance(10)
    assert store.admit("p").probe


def test_lost_probe_is_released_after_cooldown(clock: FakeClock) -> None:
    store = make(clock, cooldown=5.0)
    fail(store, 3)
    clock.advance(5)
    assert store.admit("p").probe
    clock.advance(4.99)
    assert not store.admit("p").allowed
    clock.advance(0.01)
    again = store.admit("p")
    assert again.probe and again.allowed


def test_retry_after_opens_at_least_that_long_and_never_shortens(clock: FakeClock) -> None:
    store = make(clock)
    store.record_failure("p", retry_after=120.0)  # one failure, but the server said so
    a = store.admit("p")
    assert a.state == "open"
    assert a.open_until == pytest.approx(clock.wall() + 120.0)
    store.record_failure("p", retry_after=5.0)  # shorter: ignored
    store.record_failure("p")  # threshold reached while open: no shortening either
    assert store.admit("p").open_until == pytest.approx(clock.wall() + 120.0)
    clock.advance(100)
    store.record_failure("p", retry_after=60.0)  # longer than what is left: extends
    assert store.admit("p").open_until == pytest.approx(clock.wall() + 60.0)


def test_retry_after_longer_than_cooldown_wins_when_tripping(clock: FakeClock) -> None:
    store = make(clock, cooldown=30.0)
    fail(store, 2)
    store.record_failure("p", retry_after=45.0)
    assert store.admit("p").open_until == pytest.approx(clock.wall() + 45.0)
    store2 = make(clock, cooldown=30.0)
    fail(store2, 2, "q")
    store2.record_failure("q", retry_after=2.0)
    assert store2.admit("q").open_until == pytest.approx(clock.wall() + 30.0)


def test_retry_after_is_capped_at_max_cooldown(clock: FakeClock) -> None:
    store = make(clock, max_cooldown=120.0)
    store.record_failure("p", retry_after=99_999.0)
    assert store.admit("p").open_until == pytest.approx(clock.wall() + 120.0)
    store.record_failure("p", retry_after=float("inf"))
    assert store.admit("p").open_until == pytest.approx(clock.wall() + 120.0)


def test_last_resort_is_one_call_at_a_time_per_provider(clock: FakeClock) -> None:
    store = make(clock)
    fail(store, 3)
    assert store.last_resort("p")
    assert not store.last_resort("p")  # taken until the first one ends
    assert store.last_resort("q")  # per provider
    store.end_last_resort("p", succeeded=False)
    assert store.admit("p").state == "open"  # a failed last resort changes nothing
    assert store.last_resort("p")
    with capture_events() as logs:
        store.end_last_resort("p", succeeded=True)
    assert store.admit("p") == store.admit("z")
    assert [e["reason"] for e in logs] == ["last_resort_succeeded"]


def test_zero_or_negative_retry_after_does_not_open(clock: FakeClock) -> None:
    store = make(clock)
    store.record_failure("p", retry_after=0.0)
    store.record_failure("p", retry_after=-3.0)
    assert store.admit("p").allowed


def test_failure_ratio_over_sliding_window(clock: FakeClock) -> None:
    store = make(clock, failure_threshold=None, failure_ratio=0.5, window=10.0, min_calls=4)
    for _ in range(3):
        store.record_failure("p")
        store.record_success("p")  # alternating: never 3 in a row, ratio 50%
        clock.advance(1)
    # 6 calls, 3 failed: the last failure made it 3 of 5 >= min_calls -> open
    assert store.admit("p").state == "open"
    snap = store.snapshot("p")
    assert (snap.recent_calls, snap.recent_failures) == (6, 3)


def test_failure_ratio_needs_min_calls_and_forgets_old_calls(clock: FakeClock) -> None:
    store = make(clock, failure_threshold=None, failure_ratio=0.5, window=10.0, min_calls=4)
    store.record_failure("p")
    store.record_failure("p")
    store.record_success("p")
    assert store.admit("p").allowed  # 3 calls < min_calls
    clock.advance(10)  # those calls leave the window
    store.record_success("p")
    store.record_success("p")
    store.record_success("p")
    store.record_failure("p")
    assert store.admit("p").allowed  # 1 failure out of 4 in the window
    assert store.snapshot("p").recent_calls == 4


def test_the_window_takes_constant_memory_whatever_the_traffic(clock: FakeClock) -> None:
    store = make(clock, failure_threshold=None, failure_ratio=0.5)
    store.record_success("p")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(25_000):  # 25,000 calls within one 30 s window
            store.record_failure("p") if i % 5 == 0 else store.record_success("p")
            clock.advance(0.001)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"the breaker window grew by {grown} bytes"
    snap = store.snapshot("p")
    assert (snap.recent_calls, snap.recent_failures) == (25_001, 5_000)


def test_closing_resets_the_window(clock: FakeClock) -> None:
    store = make(clock, failure_threshold=None, failure_ratio=0.5, window=60.0, min_calls=2)
    fail(store, 2)
    clock.advance(30)
    assert store.admit("p").probe
    store.record_success("p")
    store.record_failure("p")  # alone it is 1 of 1 < min_calls: stays closed
    assert store.admit("p").allowed


def test_success_while_open_does_not_close(clock: FakeClock) -> None:
    store = make(clock)
    fail(store, 3)
    store.record_success("p")  # a call admitted before the circuit opened, finishing late
    assert store.admit("p").state == "open"


def test_threads_racing_after_cooldown_get_one_probe(clock: FakeClock) -> None:
    store = make(clock, cooldown=1.0)
    fail(store, 3)
    clock.advance(1)
    barrier = threading.Barrier(8)
    probes: list[bool] = []

    def worker() -> None:
        barrier.wait()
        probes.extend(store.admit("p").probe for _ in range(200))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(probes) == 1


def test_budget_floor_then_ratio(clock: FakeClock) -> None:
    store = MemoryHealthStore(
        budget=RetryBudget(ratio=0.5, window=10, min_per_second=0.3), clock=clock
    )
    assert [store.try_acquire_retry() for _ in range(4)] == [True, True, True, False]
    for _ in range(4):
        store.record_request()
    assert [store.try_acquire_retry() for _ in range(3)] == [True, True, False]
    clock.advance(10)  # everything leaves the window: back to the floor
    assert sum(store.try_acquire_retry() for _ in range(10)) == 3
