"""``failover check``: every check ``run`` makes before sending, and an optional ping."""

from __future__ import annotations

import argparse
import asyncio
import sys

from orchestrator.cli.preflight import check_config, load
from orchestrator.cli.report import (
    CHECK_HEADER,
    PING_HEADER,
    check_rows,
    check_summary,
    ping_all,
    ping_rows,
)
from orchestrator.cli.tables import Tables
from orchestrator.cli.text import UsageError
from orchestrator.config import Config

__all__ = ["add_arguments", "check"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``check``'s options and positionals."""
    parser.add_argument("file", help="chain file (.yaml, .yml or .toml)")
    parser.add_argument("--ping", action="store_true", help="one tiny request per provider")
    parser.add_argument("--timeout", type=float, default=10.0, help="ping timeout (default 10 s)")


async def _silent_stores(config: Config) -> list[str]:
    """The shared health stores (``redis_url``) that did not answer one round trip, each
    as its URL without user info or password."""
    from orchestrator.health.redis.link import safe_url

    silent: list[str] = []
    for store in config.health_stores:
        if not hasattr(store, "sync"):
            continue  # process memory: nothing to reach
        try:
            if not await store.sync():
                silent.append(safe_url(str(getattr(store, "url", "?"))))
        finally:
            await store.aclose()
    return silent


def check(args: argparse.Namespace) -> int:
    """The ``check`` command: 0 when ``run`` would accept the file, every shared health store
    answered (1 when one did not) and every ping answered."""
    config = load(args.file)
    check_config(config)
    tables = Tables(args.tables)
    if tables.rich:
        print(f"ok: {config.path}")
        tables.table(CHECK_HEADER, check_rows(config))
    else:
        for line in check_summary(config):
            print(line)
    silent = asyncio.run(_silent_stores(config))
    for url in silent:
        print(
            f"failover: error: the health store at {url} did not answer: is Redis running "
            "there, and is redis_url right? (until it answers, each process keeps its own "
            "circuits)",
            file=sys.stderr,
        )
    if silent:
        return 1
    if not args.ping:
        return 0
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be > 0 seconds")
    pings = asyncio.run(ping_all(config.providers, config.provider_types, args.timeout))
    print()
    styles = ["green" if r.ok else "red" for r in pings]
    tables.table(PING_HEADER, ping_rows(pings), styles=styles)
    failed = [r.provider for r in pings if not r.ok]
    if failed:
        print(f"\n{len(failed)} of {len(pings)} provider(s) failed: {', '.join(failed)}")
        return 1
    return 0
