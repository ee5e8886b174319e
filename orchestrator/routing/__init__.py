"""Routing: which child of a FallbackAgent goes first, and why.

- :mod:`~orchestrator.routing.strategies`: the ``order=`` strategies (priority,
  weighted, least_busy, latency, cost).
- :mod:`~orchestrator.routing.split`: :class:`Split`, an A/B split with fallback.
- :mod:`~orchestrator.routing.state`: calls in flight, latency averages and
  affinity keys, kept in the health store (``store.routing``).
- :mod:`~orchestrator.routing.router`: one agent's routing, asked by the seam a run
  and ``failover explain`` share (:mod:`orchestrator.engine.serving`).

Nothing is imported here: the engine imports these modules, and ``Split`` (a
``FallbackAgent``) imports the engine, so ``from orchestrator import Split``.
"""
