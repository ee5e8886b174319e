"""AWS credentials and Signature Version 4 for Bedrock, through botocore.

Credentials come from botocore's standard chain (environment, shared config and
profiles, SSO, web identity, container and instance metadata), or from a session
or credentials object given. Resolving or refreshing them is blocking I/O, so it
runs on a worker thread (:class:`~providers.http.bearer.BearerToken`), once for all
callers, and again only within ``margin`` seconds of their expiry; each request is
signed with the frozen credentials of that moment by ``botocore.auth.SigV4Auth``,
built once per set of credentials. botocore (the ``[aws]`` extra) is imported only
when a provider is built.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from orchestrator.errors import NotInstalled
from orchestrator.secrets import Secret
from providers.http.bearer import BearerToken

__all__ = ["EXTRA", "SERVICE", "AwsSigner", "botocore_module", "default_region"]

EXTRA = "pip install 'failover-orchestrator[aws]'"
#: The SigV4 signing name of the Bedrock runtime.
SERVICE = "bedrock"
#: Static credentials do not expire: checked again after this many seconds anyway.
_STATIC_FOR = 3600.0


def botocore_module(what: str, provider: str) -> Any:
    """``botocore`` imported, or ``NotInstalled`` naming the extra (``what`` needs it)."""
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        import botocore.session
    except ImportError:
        raise NotInstalled(f"{what} needs botocore: {EXTRA}", provider=provider) from None
    return botocore


def default_region(profile: str | None) -> str | None:
    """The region botocore's configuration names (``AWS_DEFAULT_REGION``, the profile's
    ``region``), or None."""
    botocore = botocore_module("BedrockConverse without region=", "bedrock")
    region = botocore.session.Session(profile=profile).get_config_variable("region")
    return region if isinstance(region, str) else None


def _expiry(credentials: Any) -> float:
    """When refreshable ``credentials`` expire (epoch seconds); static ones: an hour on."""
    when: Any = getattr(credentials, "_expiry_time", None)
    stamp = when.timestamp() if hasattr(when, "timestamp") else None
    if isinstance(stamp, float) and math.isfinite(stamp):
        return stamp
    return time.time() + _STATIC_FOR


class AwsSigner:
    """Signs Bedrock requests for ``region`` with credentials resolved off the event loop.

    Give ``credentials`` (botocore ``Credentials``, or anything with
    ``get_frozen_credentials()``), or ``session`` (a botocore or boto3 session), or
    neither: ``botocore.session.Session(profile=profile)``'s chain. Credentials are
    fetched on a worker thread at the first :meth:`refresh` and ``margin`` seconds
    (default 15 minutes, botocore's own advisory refresh) before they expire.
    """

    def __init__(
        self,
        region: str,
        *,
        provider: str,
        profile: str | None = None,
        session: Any = None,
        credentials: Any = None,
        margin: float = 900.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._botocore = botocore_module("BedrockConverse", provider)
        self.region = region
        self._profile, self._session, self._source = profile, session, credentials
        self._token = BearerToken(
            self._fetch, what="AWS credentials", provider=provider, margin=margin, clock=clock
        )
        self._auth: tuple[Secret, Any] | None = None

    def _fetch(self) -> tuple[str, float]:
        """The frozen credentials (as one JSON text, kept as a Secret) and their expiry."""
        if self._source is None:
            session = self._session or self._botocore.session.Session(profile=self._profile)
            self._source = session.get_credentials()
            if self._source is None:
                raise LookupError("no AWS credentials found")
        frozen = self._source.get_frozen_credentials()
        value = json.dumps([frozen.access_key, frozen.secret_key, frozen.token])
        return value, _expiry(self._source)

    async def refresh(self) -> None:
        """Fetch the credentials when there are none yet or they expire soon."""
        await self._token.get()

    def secrets(self) -> tuple[Secret, ...]:
        """The secret key and session token in use (masked in every message)."""
        if self._auth is None:
            return ()
        credentials = self._auth[1].credentials
        return tuple(Secret(s) for s in (credentials.secret_key, credentials.token) if s)

    def _sigv4(self) -> Any:
        current = self._token.current()
        cached = self._auth
        if cached is not None and cached[0] is current:
            return cached[1]
        access_key, secret_key, token = json.loads(current.reveal())
        botocore = self._botocore
        frozen = botocore.credentials.Credentials(access_key, secret_key, token)
        auth = botocore.auth.SigV4Auth(frozen, SERVICE, self.region)
        self._auth = (current, auth)
        return auth

    def sign(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` plus ``X-Amz-Date``, any ``X-Amz-Security-Token`` and the
        ``Authorization`` SigV4 computes for a POST of ``body`` to ``url`` (as sent)."""
        request = self._botocore.awsrequest.AWSRequest("POST", url, headers, body)
        self._sigv4().add_auth(request)
        return dict(request.headers.items())
