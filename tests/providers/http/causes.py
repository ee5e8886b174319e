"""The exceptions chained to an error, for the tests that search them for secrets."""

from __future__ import annotations


def exception_chain(err: BaseException) -> list[BaseException]:
    """``err`` and every exception reachable through ``__cause__``/``__context__``, each once
    (a chain that loops back is walked once)."""
    out: list[BaseException] = []
    todo: list[BaseException | None] = [err]
    while todo:
        exc = todo.pop()
        if exc is None or any(exc is seen for seen in out):
            continue
        out.append(exc)
        todo += [exc.__cause__, exc.__context__]
    return out
