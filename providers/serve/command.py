"""``failover serve CHAIN``: the gateway as a ``failover`` sub-command (entry point
``failover.commands``; see :mod:`orchestrator.cli.plugins`)."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from orchestrator.config import ConfigError, load_config
from providers.serve.auth import ENV, GatewayKeys, hash_key, is_loopback
from providers.serve.settings import SERVERS, GatewaySettings, default_server

__all__ = ["command", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gateway's options."""
    parser.add_argument("chain", nargs="?", help="the chain file (YAML or TOML)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (8080; 0 = any free one)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default=None,
        help="the HTTP server: granian (Rust; the serve extra) or aiohttp (granian when installed)",
    )
    parser.add_argument(
        "--keys-file", help="file of hashed gateway keys (lines 'sha256:<hex>'); see --hash-key"
    )
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=256,
        help="requests at once per worker before 503 (256)",
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=16 * 1024 * 1024, help="largest request body (16 MiB)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=15.0,
        help="seconds a connection may take to send a request head (15)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds in-flight requests get to finish after SIGTERM (30)",
    )
    parser.add_argument(
        "--metrics-keys-file",
        help="file of hashed keys that open /metrics and nothing else (for scrapers); "
        "also FAILOVER_METRICS_KEYS=key1,key2",
    )
    parser.add_argument(
        "--public-metrics",
        action="store_true",
        help="serve /metrics without a key (it takes a gateway or metrics key by default)",
    )
    parser.add_argument(
        "--body-min-rate",
        type=int,
        default=8192,
        help="bytes/s a request body must average after its first 2 s, else 408 (8192)",
    )
    parser.add_argument(
        "--hash-key",
        action="store_true",
        help="read a key on stdin and print its key-file line, then exit",
    )


def _settings(args: argparse.Namespace) -> GatewaySettings:
    return GatewaySettings(
        host=args.host,
        port=args.port,
        workers=args.workers,
        max_in_flight=args.max_in_flight,
        max_body_bytes=args.max_body_bytes,
        idle_timeout=args.idle_timeout,
        grace=args.grace,
        body_min_rate=args.body_min_rate,
        public_metrics=args.public_metrics,
        server=args.server or default_server(),
    )


def _hash_key() -> int:
    key = getpass.getpass("key: ") if sys.stdin.isatty() else sys.stdin.readline().strip()
    if not key:
        print("error: no key on stdin", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; 0 after a clean drain, 2 on a usage or chain file problem."""
    if args.hash_key:
        return _hash_key()
    if not args.chain:
        print("error: failover serve: give the chain file: failover serve CHAIN", file=sys.stderr)
        return 2
    try:
        settings = _settings(args)
        config = load_config(args.chain)  # fail here, once, with the file's own messages
        _check_servable(config)
        keys_file = args.keys_file or _named_keys_file(config)
        keys = _load_keys(
            keys_file,
            named_by=None if args.keys_file else config.path,
            metrics_file=args.metrics_keys_file,
        )
    except (ValueError, TypeError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if settings.server == "granian" and default_server() != "granian":
        print(
            "error: failover serve --server granian: granian is not installed; "
            "pip install 'failover-orchestrator[serve]'",
            file=sys.stderr,
        )
        return 2
    if not keys and not is_loopback(settings.host):
        print(
            f"error: failover serve: refusing to listen on {settings.host} with no gateway key: "
            f"anyone who can reach it could spend your provider keys. Set {ENV}=key1,key2 or "
            "--keys-file FILE, or bind 127.0.0.1",
            file=sys.stderr,
        )
        return 2
    return _start(args.chain, (keys_file, args.metrics_keys_file), keys, settings)


def _check_servable(config: Any) -> None:
    """``ValueError`` for a chain file with nothing to serve: the gateway's models are its
    agents and workflows, and without one every request would be a 404."""
    if not config.agents and not config.workflows:
        raise ValueError(
            f"failover serve: {config.path} has no agents (and no workflows) to serve as "
            "models; add one, e.g. `agents: {main: {providers: [NAME, ...]}}`"
        )


def _load_keys(
    keys_file: str | None, named_by: str | None, metrics_file: str | None
) -> GatewayKeys:
    """The gateway (and metrics) keys; a key file that is missing says where it was looked for."""
    if keys_file and not Path(keys_file).exists():
        origin = f" (gateway.keys_file of {named_by})" if named_by else " (--keys-file)"
        raise ValueError(
            f"failover serve: key file {Path(keys_file).absolute()} not found{origin}; "
            "create it with one line per key from `failover serve --hash-key`, or set "
            f"{ENV}=key1,key2 instead"
        )
    return GatewayKeys.load(key_file=keys_file, metrics_file=metrics_file)


def _named_keys_file(config: Any) -> str | None:
    """The chain file's ``gateway: {keys_file: ...}``, relative to the chain file."""
    named = config.gateway.get("keys_file")
    return None if named is None else str(Path(config.path).parent / Path(named).expanduser())


def _announce(settings: GatewaySettings, keys: GatewayKeys) -> None:
    auth = f"{len(keys)} gateway key(s)" if keys else "no key (loopback only)"
    print(
        f"failover serve: http://{settings.host}:{settings.port} "
        f"({settings.workers} worker(s), {auth})",
        flush=True,
    )


def _start(
    chain: str,
    keys_files: tuple[str | None, str | None],
    keys: GatewayKeys,
    settings: GatewaySettings,
) -> int:
    from dataclasses import replace

    try:
        if settings.workers > 1:
            from providers.serve.workers import run_workers

            return run_workers(
                chain,
                keys_files,
                settings,
                lambda port: _announce(replace(settings, port=port), keys),
            )
        from providers.serve.server import listen_socket, run_worker

        sock = listen_socket(settings.host, settings.port, reuse_port=False)
        ready = replace(settings, port=sock.getsockname()[1])
        run_worker(chain, keys, settings, sock, lambda: _announce(ready, keys))
    except OSError as exc:
        print(f"error: cannot listen on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


class _Serve:
    """``failover serve``: the plug-in command (help, options, run)."""

    help = "serve every agent of a chain file as an OpenAI- and Anthropic-compatible endpoint"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        return run(args)


command = _Serve()


def main(argv: list[str] | None = None) -> int:
    """``python -m providers.serve``: parse ``argv`` and run the gateway."""
    parser = argparse.ArgumentParser(prog="python -m providers.serve", description=_Serve.help)
    add_arguments(parser)
    return run(parser.parse_args(argv))
