"""Bearer tokens that expire (Microsoft Entra ID, Google OAuth): fetched off the event loop.

A cloud's credential library fetches a token with blocking I/O (a metadata
endpoint, a CLI, a token file). :class:`BearerToken` runs that fetch on a worker
thread, one fetch at a time for every caller, and reuses the token until
``margin`` seconds before it expires, so a call never waits on a refresh that
could have happened earlier and never sends a token about to expire.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable

from orchestrator.errors import AuthenticationFailed, ProviderError
from orchestrator.secrets import Secret
from providers.http.redact import Redacted

__all__ = ["BearerToken", "Fetch"]

#: A blocking fetch of ``(token, expires_at)``, ``expires_at`` in epoch seconds.
Fetch = Callable[[], tuple[str, float]]


class BearerToken:
    """A token from ``fetch``, refreshed ``margin`` seconds (default 5 minutes) before
    it expires; ``clock`` (epoch seconds) is injectable for tests.

    Use :meth:`get` before each request and :meth:`current` while building its
    headers. A failed or malformed fetch is ``AuthenticationFailed`` (the provider
    is unusable: fall over at once) naming ``what`` and the exception's type only (its
    ``__cause__`` too: never the library's words). A taxonomy error the fetch raises
    itself (``NotInstalled`` naming an extra) is raised as it is.
    """

    def __init__(
        self,
        fetch: Fetch,
        *,
        what: str,
        provider: str,
        margin: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._fetch = fetch
        self._what = what
        self._provider = provider
        self._margin = margin
        self._clock = clock
        self._lock = threading.Lock()  # one fetch at a time, whichever loop or thread asks
        self._token: Secret | None = None
        self._expires_at = -math.inf

    def fresh(self) -> Secret | None:
        """The token when it is not within ``margin`` of its expiry, else None."""
        if self._token is not None and self._clock() < self._expires_at - self._margin:
            return self._token
        return None

    def current(self) -> Secret:
        """The last token fetched (``AuthenticationFailed`` before the first :meth:`get`)."""
        if self._token is None:
            raise AuthenticationFailed(
                f"{self._what}: no token fetched yet", provider=self._provider
            )
        return self._token

    async def get(self) -> Secret:
        """A fresh token: the cached one, else one fetched on a worker thread."""
        token = self.fresh()
        return token if token is not None else await asyncio.to_thread(self._refresh)

    def _refresh(self) -> Secret:
        with self._lock:
            token = self.fresh()  # another caller may have refreshed while this one waited
            if token is not None:
                return token
            failure: AuthenticationFailed | None = None
            try:
                value, expires_at = self._fetch()
            except ProviderError:
                raise  # the fetch's own taxonomy error (NotInstalled naming an extra): as is
            except Exception as exc:  # the credential library's own errors, whatever they are
                failure = AuthenticationFailed(
                    f"{self._what}: {type(exc).__name__} while fetching a token",
                    provider=self._provider,
                )
                # The type alone: a credential library's words may quote a key or a token.
                failure.__cause__ = Redacted(type(exc).__name__)
            if failure is not None:
                raise failure  # outside the except block: no library error as context
            return self._keep(value, expires_at)

    def _keep(self, value: object, expires_at: object) -> Secret:
        if not (isinstance(expires_at, int | float) and math.isfinite(expires_at)):
            value = None
        if not isinstance(value, str) or not value or not isinstance(expires_at, int | float):
            raise AuthenticationFailed(
                f"{self._what}: the credential returned no token or no expiry time",
                provider=self._provider,
            )
        self._token = Secret(value)
        self._expires_at = float(expires_at)
        return self._token
