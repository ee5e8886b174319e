"""Upstream documents as values or taxonomy errors: every JSON reply and event goes through here.

:func:`load_json` parses with the strict, bounded :func:`~providers.http.safe_json.parse_json`
and turns a refusal into ``InvalidOutput``; :func:`load_json_async` does the same off the
event loop for a large document, within the attempt's deadline.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from orchestrator.errors import InvalidOutput, ProviderError
from providers.http.errors import map_transport_error, short
from providers.http.safe_json import parse_json

__all__ = ["OFF_LOOP_BYTES", "load_json", "load_json_async", "off_loop"]

OFF_LOOP_BYTES = 1 << 20
"""Documents longer than this (1 MiB) are parsed in a worker thread by
:func:`load_json_async`; a healthy reply is a few KB and is parsed in place."""


def off_loop(data: bytes | str) -> bool:
    """Whether :func:`load_json_async` parses ``data`` in a worker thread (it is longer
    than :data:`OFF_LOOP_BYTES`); anything else may be parsed in place by :func:`load_json`."""
    return len(data) > OFF_LOOP_BYTES


def load_json(data: bytes | str, *, provider: str, what: str = "reply") -> Any:
    """Parse JSON with :func:`parse_json`, raising ``InvalidOutput`` when it is not."""
    try:
        return parse_json(data)
    except ValueError as exc:
        # Described, not chained: a JSONDecodeError holds the whole document (.doc).
        reason = (
            f"{type(exc).__name__} at char {exc.pos}"
            if isinstance(exc, json.JSONDecodeError)
            else short(str(exc))
        )
        failure = InvalidOutput(
            f"{what} is not valid JSON ({reason}, {len(data)} bytes)", provider=provider
        )
    raise failure


async def load_json_async(
    data: bytes | str,
    *,
    provider: str,
    what: str = "reply",
    deadline: float | None = None,
    timeout: float = 0.0,
) -> Any:
    """:func:`load_json`, off the event loop for a document over :data:`OFF_LOOP_BYTES`
    and within ``deadline`` (``loop.time()`` seconds; the attempt's end): past it,
    ``ProviderTimeout`` naming ``timeout``, the attempt's length.

    The scan and the parse are bounded (``MAX_JSON_TOKENS``), so a thread abandoned
    at the deadline ends soon after; between the scan's steps, and at each number
    parsed, the loop gets the interpreter back.
    """
    if not off_loop(data):
        return load_json(data, provider=provider, what=what)
    failure: ProviderError | None = None
    try:
        async with asyncio.timeout_at(deadline):
            return await asyncio.to_thread(load_json, data, provider=provider, what=what)
    except TimeoutError:
        failure = map_transport_error(True, "", provider=provider, timeout=timeout)
    raise failure  # not in the except block: no TimeoutError as context
