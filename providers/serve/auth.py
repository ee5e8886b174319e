"""Gateway keys: who may call the gateway.

Keys come from ``FAILOVER_GATEWAY_KEYS`` (comma-separated) and/or a key file of
SHA-256 digests, one ``sha256:<hex>`` per line (``#`` comments allowed; make a
line with ``failover serve --hash-key``), so the file holds no usable key.
A presented key (``Authorization: Bearer K`` or ``x-api-key: K``) is hashed and
compared with every stored digest by :func:`hmac.compare_digest`: the time taken
says nothing about how much of a key matched. The client's key is only ever
compared: requests to providers are built from the chain file's own keys.

A line may go on with the key's limits and budget (:mod:`providers.serve.quotas`).

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

from providers.serve.quotas import KeyQuota, parse_quota

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

    def __init__(
        self,
        digests: Iterable[bytes] = (),
        metrics: Iterable[bytes] = (),
        quotas: Iterable[KeyQuota | None] = (),
    ) -> None:
        self._digests = tuple(digests)
        self._metrics = tuple(metrics)
        given = tuple(quotas)
        self._quotas = given + (None,) * (len(self._digests) - len(given))

    @classmethod
    def load(
        cls,
        environ: Mapping[str, str] | None = None,
        key_file: str | None = None,
        metrics_file: str | None = None,
    ) -> GatewayKeys:
        """Keys from the environment and the key files; ``ValueError`` naming a bad line."""
        env = os.environ if environ is None else environ
        digests, quotas = _load(env, ENV, key_file)
        return cls(digests, _load(env, METRICS_ENV, metrics_file)[0], quotas)

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def allows(self, presented: str | None) -> bool:
        """Whether ``presented`` is one of the keys; every digest is compared, always."""
        return _among(presented, self._digests)

    def quota_of(self, presented: str | None) -> KeyQuota | None:
        """The limits and budget of the key ``presented`` (None: it has none, or is no key);
        every digest is compared, always."""
        index = _index(presented, self._digests)
        return None if index is None else self._quotas[index]

    @property
    def quotas(self) -> tuple[KeyQuota, ...]:
        """Every key's quota, for ``/metrics``."""
        return tuple(q for q in self._quotas if q is not None)

    def allows_metrics(self, presented: str | None) -> bool:
        """Whether ``presented`` opens ``/metrics``: a gateway key or a metrics key."""
        return _among(presented, self._digests + self._metrics)

    def __repr__(self) -> str:
        return f"GatewayKeys({len(self._digests)} key(s))"


def _among(presented: str | None, digests: tuple[bytes, ...]) -> bool:
    return _index(presented, digests) is not None


def _index(presented: str | None, digests: tuple[bytes, ...]) -> int | None:
    """Which digest ``presented`` hashes to; every one is compared, so the time taken
    says nothing about which (or how much of one) matched."""
    if not presented or len(presented) > _MAX_KEY:
        return None
    digest = _digest(presented)
    found = -1
    for i, stored in enumerate(digests):
        same = hmac.compare_digest(digest, stored)
        found = i if same else found
    return None if found < 0 else found


def _load(
    env: Mapping[str, str], name: str, key_file: str | None
) -> tuple[list[bytes], list[KeyQuota | None]]:
    keys = [k.strip() for k in env.get(name, "").split(",") if k.strip()]
    digests = [_digest(k) for k in keys]
    quotas: list[KeyQuota | None] = [None] * len(digests)
    if key_file:
        for digest, quota in _read_file(Path(key_file)):
            digests.append(digest)
            quotas.append(quota)
    return digests, quotas


def _read_file(path: Path) -> list[tuple[bytes, KeyQuota | None]]:
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
        head, rest = [*line.split(None, 1), ""][:2]
        hexed = head[len(_PREFIX) :] if head.startswith(_PREFIX) else ""
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
        digests.append((digest, parse_quota(rest.strip(), f"{path}:{n}", n)))
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
