"""Property tests: at most one probe per cooldown, and the retry budget is never exceeded."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.health import CircuitBreaker, MemoryHealthStore, RetryBudget
from orchestrator.testing import FakeClock

# Weighted towards admits and time passing, so probe races are common; arguments
# of advance and rate_limited are multiples of the cooldown.
_KINDS = ["admit"] * 4 + ["advance"] * 3 + ["failure"] * 2 + ["success", "rate_limited"]
circuit_ops = st.lists(
    st.tuples(
        st.sampled_from(_KINDS),
        st.sampled_from(["a", "a", "a", "b"]),
        st.integers(0, 12).map(lambda k: k / 10),
    ),
    max_size=120,
)


@settings(max_examples=1000, deadline=None)
@given(ops=circuit_ops, threshold=st.integers(1, 4), cooldown=st.floats(0.5, 20.0))
def test_never_more_than_one_probe_per_cooldown(
    ops: list[tuple[str, str, float]], threshold: int, cooldown: float
) -> None:
    clock = FakeClock()
    store = MemoryHealthStore(
        circuit=CircuitBreaker(failure_threshold=threshold, cooldown=cooldown), clock=clock
    )
    last_probe: dict[str, float] = {}  # provider -> time of the last probe granted
    outcome_since: dict[str, bool] = {}  # an outcome was recorded since that probe
    for op, provider, amount in ops:
        if op == "advance":
            clock.advance(amount * cooldown)
        elif op == "rate_limited":
            store.record_failure(provider, retry_after=amount * 2 * cooldown)
            outcome_since[provider] = True
        elif op in ("success", "failure"):
            if op == "success":
                store.record_success(provider)
            else:
                store.record_failure(provider)
            outcome_since[provider] = True
        else:
            before = store.snapshot(provider)
            admission = store.admit(provider)
            if before.state == "open":
                assert not admission.allowed  # never through while the cooldown runs
            if admission.probe:
                assert admission.allowed and admission.state == "half_open"
                previous = last_probe.get(provider)
                if previous is not None and not outcome_since.get(provider, True):
                    assert clock.now() - previous >= cooldown
                last_probe[provider] = clock.now()
                outcome_since[provider] = False
            elif admission.allowed:
                assert admission.state == "closed"


budget_ops = st.lists(
    st.one_of(
        st.tuples(st.just("request"), st.integers(1, 20)),
        st.tuples(st.just("retry"), st.integers(1, 20)),
        st.tuples(st.just("advance"), st.floats(0.0, 4.0)),
    ),
    max_size=150,
)


@settings(max_examples=300, deadline=None)
@given(
    ops=budget_ops,
    ratio=st.floats(0.0, 1.0),
    window=st.floats(0.5, 10.0),
    floor=st.floats(0.0, 5.0),
)
def test_budget_never_exceeded_and_never_refuses_wrongly(
    ops: list[tuple[str, float]], ratio: float, window: float, floor: float
) -> None:
    clock = FakeClock()
    budget = RetryBudget(ratio=ratio, window=window, min_per_second=floor)
    store = MemoryHealthStore(budget=budget, clock=clock)
    requests: list[float] = []
    granted: list[float] = []

    def in_window(times: list[float]) -> int:
        now = clock.now()
        return sum(1 for t in times if now - window < t <= now)

    for op, arg in ops:
        if op == "advance":
            clock.advance(arg)
            continue
        for _ in range(int(arg)):
            if op == "request":
                store.record_request()
                requests.append(clock.now())
                continue
            allowance = ratio * in_window(requests) + floor * window
            if store.try_acquire_retry():
                granted.append(clock.now())
                assert in_window(granted) <= allowance + 1e-9
            else:  # refused only when one more would exceed the allowance
                assert in_window(granted) + 1 > allowance - 1e-9
