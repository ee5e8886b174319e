"""The wire side of the Redis store: connecting, loading scripts, listening for changes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from orchestrator.health.redis.scripts import CLAIM, READ, RECORD, REOPEN
from orchestrator.secrets import redact_url
from orchestrator.tasks import raise_if_cancel_requested

__all__ = ["close_client", "connect", "listen", "safe_url"]


def safe_url(url: str) -> str:
    """The URL for events and reprs: no user info and no query (redis-py also takes
    ``?password=``), by the project's one rule (:func:`orchestrator.secrets.redact_url`);
    ``***@`` marks that the URL carried user info."""
    shown = redact_url(url)
    scheme, sep, rest = shown.partition("://")
    if sep and "@" in url.split("?", 1)[0]:
        return f"{scheme}://***@{rest}"
    return shown


async def connect(url: str, timeout: float) -> tuple[Any, dict[str, str]]:
    """A client whose every command gives up after ``timeout``, and the scripts' SHAs."""
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    client: Any = aioredis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=max(timeout, 1.0),  # a busy host may connect slowly
        retry=Retry(NoBackoff(), 0),
        single_connection_client=True,
    )
    scripts = {"record": RECORD, "read": READ, "claim": CLAIM, "reopen": REOPEN}
    try:
        pipe = client.pipeline(transaction=False)
        for text in scripts.values():
            pipe.script_load(text)
        shas = dict(zip(scripts, await pipe.execute(), strict=True))
    except BaseException:
        await close_client(client)
        raise
    return client, shas


async def close_client(client: Any) -> None:
    """Close quietly: used on paths where Redis may already be gone."""
    if client is not None:
        with contextlib.suppress(Exception):
            await client.aclose()


async def listen(url: str, channel: str, on_message: Callable[[], None]) -> None:
    """Call ``on_message`` for every message on ``channel``; returns when the link breaks."""
    import redis.asyncio as aioredis

    client: Any = aioredis.Redis.from_url(url, socket_timeout=None, socket_connect_timeout=1.0)
    pubsub: Any = client.pubsub(ignore_subscribe_messages=True)
    try:
        await pubsub.subscribe(channel)
        while True:
            raise_if_cancel_requested()
            if await pubsub.get_message(timeout=1.0) is not None:
                on_message()
    except Exception:
        return  # the sync loop notices the outage on its own and restarts the listener
    finally:
        with contextlib.suppress(Exception):
            await pubsub.aclose()
        await close_client(client)
