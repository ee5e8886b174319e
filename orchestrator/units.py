"""Seconds: the one rule for every time argument of the library.

Every duration a user gives (a timeout, a retry delay, a circuit's cooldown, a
CLI agent's idle limit...) is ``Seconds``: an ``int``/``float`` number of seconds
or a ``datetime.timedelta``, normalized once at the entry point by
:func:`seconds`. The verdict is the same everywhere: a ``bool``, a string or any
other type is a ``TypeError``; NaN, infinity and negatives are a ``ValueError``
(``None``, not infinity, means "no limit" where a limit is optional); zero is
refused unless the argument allows it (a retry delay may be 0, a timeout may not).
"""

from __future__ import annotations

import math
from datetime import timedelta

__all__ = ["Seconds", "seconds", "seconds_or_none"]

Seconds = float | timedelta
"""A duration argument: a number of seconds or a ``timedelta``."""


def seconds(value: Seconds, field: str, *, allow_zero: bool = False) -> float:
    """``value`` as float seconds, or raise naming ``field``, the rule and the value.

    ``field`` is how the user wrote the argument (``"OpenAIChat.timeout"``,
    ``"CircuitBreaker.cooldown"``); messages start ``field=value`` so the chain
    file's errors can point at the key.
    """
    if isinstance(value, timedelta):
        number = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an int past float's range
            number = math.inf
    else:
        raise TypeError(
            f"{field}={value!r} must be seconds: a number or a datetime.timedelta, "
            f"not {type(value).__name__}"
        )
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{field}={value!r} must be a finite number of seconds {bound}")
    return number


def seconds_or_none(value: Seconds | None, field: str, *, allow_zero: bool = False) -> float | None:
    """Like :func:`seconds`, where ``None`` means no limit (and is returned as is)."""
    if value is None:
        return None
    try:
        return seconds(value, field, allow_zero=allow_zero)
    except ValueError as exc:
        raise ValueError(f"{exc} (or None for no limit)") from None
