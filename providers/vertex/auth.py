"""Where a Vertex AI provider's OAuth token comes from, and where its endpoint is.

A token is, in this order: ``access_token=`` (static), a ``credentials=`` object
(google-auth), ``$GOOGLE_OAUTH_ACCESS_TOKEN`` (static, read at call time), else
google-auth's application default credentials (``google.auth.default``: a
service-account file, workload identity, the gcloud user). Credentials are
refreshed on a worker thread, five minutes before they expire
(:class:`~providers.http.bearer.BearerToken`), never on the event loop.
google-auth is the ``[gcp]`` extra, imported only by that refresh.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from orchestrator.errors import AuthenticationFailed, NotInstalled
from orchestrator.secrets import Secret
from providers.http.bearer import BearerToken

__all__ = [
    "SCOPE",
    "TOKEN_ENV",
    "GoogleToken",
    "model_path",
    "vertex_base_url",
]

#: The OAuth scope Vertex AI calls need.
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: A static access token from the environment (``gcloud auth print-access-token``).
TOKEN_ENV = "GOOGLE_OAUTH_ACCESS_TOKEN"
_EXTRA = "pip install 'failover-orchestrator[gcp]'"
#: A token with no expiry time (some credential types) is refreshed after this long.
_UNKNOWN_LIFETIME = 3600.0
_PROJECT = re.compile(r"[a-z0-9](?:[a-z0-9.:-]{0,98}[a-z0-9])?", re.IGNORECASE)
_LOCATION = re.compile(r"[a-z][a-z0-9-]{0,40}")
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
#: Multi-region endpoints (the anthropic SDK's names); other locations are regional hosts.
_HOSTS = {
    "global": "aiplatform.googleapis.com",
    "us": "aiplatform.us.rep.googleapis.com",
    "eu": "aiplatform.eu.rep.googleapis.com",
}


def _given_or_env(value: str | None, env_vars: tuple[str, ...]) -> str | None:
    if value is not None:
        return value
    return next((os.environ[v] for v in env_vars if os.environ.get(v)), None)


def model_path(
    owner: str,
    publisher: str,
    model: str,
    project: str | None,
    location: str | None,
    *,
    env: tuple[tuple[str, ...], tuple[str, ...]],
) -> tuple[str, str, str]:
    """``(project, location, "/projects/P/locations/L/publishers/PUB/models/M")``, each
    checked (``ValueError`` naming the argument and the variables read when not given)."""
    project = _given_or_env(project, env[0])
    location = _given_or_env(location, env[1])
    if not isinstance(project, str) or not _PROJECT.fullmatch(project):
        raise ValueError(
            f"{owner}.project={project!r}: give the Google Cloud project id "
            f"(project=, or set {' or '.join(env[0])})"
        )
    if not isinstance(location, str) or not _LOCATION.fullmatch(location):
        raise ValueError(
            f"{owner}.location={location!r}: give a Vertex AI location such as 'us-east5', "
            f"'europe-west1' or 'global' (location=, or set {' or '.join(env[1])})"
        )
    if not isinstance(model, str) or not _MODEL.fullmatch(model):
        raise ValueError(f"{owner}.model={model!r} must be a Vertex AI model id")
    path = f"/projects/{quote(project, safe='')}/locations/{location}"
    return project, location, f"{path}/publishers/{publisher}/models/{quote(model, safe='@')}"


def vertex_base_url(location: str) -> str:
    """The Vertex AI API root for ``location`` (``https://{location}-aiplatform.../v1``)."""
    host = _HOSTS.get(location, f"{location}-aiplatform.googleapis.com")
    return f"https://{host}/v1"


def _expiry(expiry: Any, now: float) -> float:
    """google-auth's ``expiry`` (a naive UTC datetime, or None) in epoch seconds."""
    if isinstance(expiry, datetime):
        aware = expiry if expiry.tzinfo is not None else expiry.replace(tzinfo=UTC)
        return aware.timestamp()
    return now + _UNKNOWN_LIFETIME


def _default_credentials(provider: str) -> Any:
    """google-auth's application default credentials (blocking: on the worker thread)."""
    try:
        import google.auth
    except ImportError:
        raise NotInstalled(
            f"Vertex AI without access_token= needs google-auth: {_EXTRA}", provider=provider
        ) from None
    credentials, _ = google.auth.default(scopes=[SCOPE])
    return credentials


def _refresh(credentials: Any, provider: str) -> None:
    try:
        from google.auth.transport.requests import Request
    except ImportError:
        raise NotInstalled(
            f"refreshing Google credentials needs google-auth[requests]: {_EXTRA}",
            provider=provider,
        ) from None
    credentials.refresh(Request())


class GoogleToken:
    """A Vertex provider's bearer token (see the module docstring for the order).

    Call :meth:`ready` before each request (it refreshes, off the loop, when due)
    and :meth:`current` while building the request's headers.
    """

    def __init__(
        self,
        *,
        access_token: str | Secret | None,
        credentials: Any,
        provider: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if access_token is not None and credentials is not None:
            raise ValueError(f"{provider}: give access_token= or credentials=, not both")
        if access_token is not None and not isinstance(access_token, str | Secret):
            raise TypeError(f"{provider}: access_token must be a str")
        if credentials is not None and not callable(getattr(credentials, "refresh", None)):
            raise TypeError(f"{provider}: credentials= must be google-auth credentials")
        self._static = Secret(access_token) if isinstance(access_token, str) else access_token
        self._credentials = credentials
        self._provider = provider
        self._clock = clock
        self._bearer = BearerToken(self._fetch, what="Google", provider=provider, clock=clock)

    @property
    def given(self) -> Secret | None:
        """The static token given (``access_token=``), if any."""
        return self._static

    def _from_env(self) -> Secret | None:
        if self._static is not None or self._credentials is not None:
            return None
        value = os.environ.get(TOKEN_ENV)
        return Secret(value) if value else None

    async def ready(self) -> None:
        """Make :meth:`current` valid: a refresh on a worker thread when one is due."""
        if self._static is None and self._from_env() is None:
            await self._bearer.get()

    def current(self) -> Secret:
        """The token to send now (``AuthenticationFailed`` before the first :meth:`ready`)."""
        static = self._static or self._from_env()
        return static if static is not None else self._bearer.current()

    def _fetch(self) -> tuple[str, float]:
        """Refresh the credentials (blocking I/O: runs on a worker thread)."""
        if self._credentials is None:
            self._credentials = _default_credentials(self._provider)
        credentials = self._credentials
        _refresh(credentials, self._provider)
        token = getattr(credentials, "token", None)
        if not isinstance(token, str) or not token:
            raise AuthenticationFailed(
                "Google: the credentials gave no access token", provider=self._provider
            )
        return token, _expiry(getattr(credentials, "expiry", None), self._clock())
