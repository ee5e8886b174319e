"""The engine: FallbackAgent and one run of it (children, attempts, retries, hand-overs, streaming).

``agent`` holds :class:`FallbackAgent` (re-exported by :mod:`orchestrator`); ``run``
the loop over children and how each kind of child is tried; ``attempt`` one call
under its deadline and the run's attempt log; ``retrying`` the stop conditions and
the retry loop; ``classify`` which failures are retried, handed over or raised;
``delivery`` how text reaches the caller (buffered or streamed); ``streaming`` the
consumer's side of ``agent.stream``.
"""
