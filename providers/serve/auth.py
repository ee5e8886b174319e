"""Gateway keys: who may call the gateway.

Keys come from ``FAILOVER_GATEWAY_KEYS`` (comma-separated) and/or a key file of
SHA-256 digests, one ``sha256:<hex>`` per line (``#`` comments allowed; make a
line with ``failover serve --hash-key``), so the file holds no usable key.
A presented key (``Authorization: Bearer K`` or ``x-api-key: K``) is hashed and
compared with every stored digest by :func:`hmac.compare_digest`: the time taken
says nothing about how much of a key matched. The client's key is only ever
compared: requests to providers are built from the chain file's own keys.

``/metrics`` takes a gateway key, or a metrics key (``FAILOVER_METRICS_KEYS`` and/or
``--metrics-keys-file``, same formats), which opens ``/metrics`` and nothing else: a
scraper needs no key that can spend provider tokens. ``--public-metrics`` opens it to all.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["ENV", "METRICS_ENV", "GatewayKeys", "hash_key", "is_loopback"]

ENV = "FAILOVER_GATEWAY_KEYS"
METRICS_ENV = "FAILOVER_METRICS_KEYS"
_PREFIX = "sha256:"
_MAX_FILE = 1 << 20
_MAX_KEY = 1024


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def hash_key(key: str) -> str:
    """The key file line for ``key``: ``sha256:<hex>``."""
    return _PREFIX + _digest(key).hex()


class GatewayKeys:
    """The digests of the keys allowed in; empty means no key is configured.

    ``metrics`` holds the digests of keys that open ``/metrics`` only."""

    def __init__(self, digests: Iterable[bytes] = (), metrics: Iterable[bytes] = ()) -> None:
        self._digests = tuple(digests)
        self._metrics = tuple(metrics)

    @classmethod
    def load(
        cls,
        environ: Mapping[str, str] | None = None,
        key_file: str | None = None,
        metrics_file: str | None = None,
    ) -> GatewayKeys:
        """Keys from the environment and the key files; ``ValueError`` naming a bad line."""
        env = os.environ if environ is None else environ
        return cls(_load(env, ENV, key_file), _load(env, METRICS_ENV, metrics_file))

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def allows(self, presented: str | None) -> bool:
        """Whether ``presented`` is one of the keys; every digest is compared, always."""
        return _among(presented, self._digests)

    def allows_metrics(self, presented: str | None) -> bool:
        """Whether ``presented`` opens ``/metrics``: a gateway key or a metrics key."""
        return _among(presented, self._digests + self._metrics)

    def __repr__(self) -> str:
        return f"GatewayKeys({len(self._digests)} key(s))"


def _among(presented: str | None, digests: tuple[bytes, ...]) -> bool:
    if not presented or len(presented) > _MAX_KEY:
        return False
    digest = _digest(presented)
    ok = False
    for stored in digests:
        ok |= hmac.compare_digest(digest, stored)
    return ok


def _load(env: Mapping[str, str], name: str, key_file: str | None) -> list[bytes]:
    keys = [k.strip() for k in env.get(name, "").split(",") if k.strip()]
    digests = [_digest(k) for k in keys]
    if key_file:
        digests += _read_file(Path(key_file))
    return digests


def _read_file(path: Path) -> list[bytes]:
    try:
        size = path.stat().st_size
        if size > _MAX_FILE:
            raise ValueError(f"{path}: {size} bytes; a key file holds at most {_MAX_FILE}")
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ValueError(f"key file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:  # its own message would quote the file's bytes
        raise ValueError(f"key file {path}: not UTF-8 text") from None
    digests = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        hexed = line[len(_PREFIX) :] if line.startswith(_PREFIX) else ""
        try:
            digest = bytes.fromhex(hexed)
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise ValueError(
                f"{path}:{n}: expected 'sha256:' and 64 hex digits (make one with "
                "`failover serve --hash-key`), got a line of "
                f"{len(line)} characters"
            )
        digests.append(digest)
    return digests


def presented_key(authorization: str | None, api_key: str | None) -> str | None:
    """The key a client sent: ``Authorization: Bearer K`` or ``x-api-key: K``."""
    if api_key:
        return api_key.strip()
    if authorization:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer":
            return value.strip()
    return None


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
