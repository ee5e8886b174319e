"""The engine: FallbackAgent and one run of it (children, attempts, retries, hand-overs, streaming).

``agent`` holds :class:`FallbackAgent` (re-exported by :mod:`orchestrator`); ``run``
the loop over children; ``attempt`` one call under its deadline; ``classify`` which
failures are retried, handed over or raised; ``streaming`` the streamed delivery.
"""
