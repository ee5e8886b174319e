"""Split: assign each call to one arm by weight (an A/B test), falling back inside the split.

``Split({"experimental": 0.1, "stable": 0.9}, children=[exp, stable])`` is a chain
whose first child is drawn by weight (the arms are named in the order of
``children``); the other arms follow, and the chain around the split follows
them. With a key (``run(..., split_key=KEY)``, or ``affinity=KEY``) the draw is
the key's hash, so a user stays in one arm on every replica; without one, the
agent's ``rng``. The arm a call was assigned to is ``result.arm`` (also when
another arm or the rest of the chain answered), on the ``run_succeeded`` /
``run_failed`` events, the run span (``failover.arm``) and the attempt metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.engine.agent import FallbackAgent
from orchestrator.routing.router import Router
from orchestrator.routing.strategies import Weighted, check_weights

if TYPE_CHECKING:
    from orchestrator.types import Provider

__all__ = ["Split"]


class Split(FallbackAgent):
    """A chain whose first child is an arm drawn by weight, then the other arms.

    Takes every :class:`FallbackAgent` keyword but ``order`` and ``weights`` (the
    arms are the weights); nest it in a chain to fall back past it.
    """

    def __init__(
        self,
        arms: Mapping[str, float],
        *,
        children: Sequence[Provider | FallbackAgent],
        name: str | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(arms, Mapping) or not arms:
            raise TypeError("Split: arms must be a mapping of arm name to weight, e.g. {'a': 0.5}")
        if "order" in settings or "weights" in settings:
            raise TypeError("Split: the arms' weights are the order; drop order= and weights=")
        labels = tuple(str(a) for a in arms)
        if len(labels) != len(children):
            raise ValueError(
                f"Split: {len(labels)} arms {list(labels)} for {len(children)} children; "
                "give one child per arm, in the same order"
            )
        name = name or "split(" + ",".join(labels) + ")"
        super().__init__(children, name=name, **settings)
        weights = check_weights(dict(zip(labels, arms.values(), strict=True)), labels, "Split")
        self.arms = dict(zip(labels, weights, strict=True))
        strategy = Weighted(weights, self.members)
        self.router = Router(strategy, affinity_ttl=self.router.affinity_ttl, arms=labels)

    def __repr__(self) -> str:
        return f"Split({self.arms!r}, children={[c.name for c in self.children]!r})"
