"""How long a provider asks us to wait: the ``Retry-After`` headers and "try again in 20s" prose.

Pure functions over headers and text, shared by the HTTP mappers and the CLI classifier.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping

__all__ = ["finite_seconds", "header", "parse_retry_after", "retry_hint"]


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Header ``name`` (lower case) from any mapping, matching case-insensitively."""
    value = headers.get(name)
    if value is None:
        for key, v in headers.items():
            if key.lower() == name:
                return v
    return value


def finite_seconds(text: str | None) -> float | None:
    """``text`` as a finite float, else ``None`` ("nan" and "1e999" are no usable hint)."""
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).

    ``None`` when neither header is present or parseable; never negative.
    ``now`` (epoch seconds) is for tests; it defaults to ``time.time()``.
    """
    ms = finite_seconds(header(headers, "retry-after-ms"))
    if ms is not None:
        return max(0.0, ms / 1000.0)
    value = header(headers, "retry-after")
    if value is None:
        return None
    value = value.strip()
    delay = finite_seconds(value)
    if delay is not None:
        return max(0.0, delay)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_UNIT = r"(?:ms|milliseconds?|h|hours?|m|mins?|minutes?|s|secs?|seconds?)(?![a-z])"
_TRY_AGAIN = re.compile(
    rf"(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*{_UNIT}\s*)+)", re.IGNORECASE
)
_DURATION_PART = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNIT})", re.IGNORECASE)


def _unit_seconds(unit: str) -> float:
    u = unit.lower()
    if u.startswith(("ms", "milli")):
        return 0.001
    if u.startswith("h"):
        return 3600.0
    return 60.0 if u.startswith("m") else 1.0


def retry_hint(message: str) -> float | None:
    """Seconds from "Please try again in 20s" / "in 1.5s" / "in 300ms" / "in 1m30s" /
    "retry after 5 seconds" (or None)."""
    match = _TRY_AGAIN.search(message)
    if match is None:
        return None
    parts = _DURATION_PART.findall(match.group(1))
    total = sum(float(n) * _unit_seconds(u) for n, u in parts)
    return total if math.isfinite(total) else None  # an overflow is no hint
