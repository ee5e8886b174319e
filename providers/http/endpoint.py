"""Which base URL a vendor provider uses: the one given, else the environment's, else the
vendor's own, in the order the official SDKs use.

``OpenAIChat`` reads ``OPENAI_BASE_URL`` (as the ``openai`` SDK does),
``AnthropicMessages`` ``ANTHROPIC_BASE_URL`` (the ``anthropic`` SDK), and
``GeminiGenerate`` ``GOOGLE_GEMINI_BASE_URL`` (Google's ``google-genai`` SDK and the
Gemini CLI), then ``GEMINI_BASE_URL`` (this project's chain files used it first).
So code and chain files written for a vendor run unchanged against a gateway or
``failover simulate``, which prints the ``export`` lines. An empty variable counts as
unset. The URL is read when the provider is built (like the SDKs' clients), and checked
as a given one is, the error naming the variable.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from orchestrator.secrets import check_endpoint

__all__ = ["base_url_from_env", "join_url"]


def base_url_from_env(
    given: str | None, env_vars: tuple[str, ...], default: str, *, allow_insecure_http: bool
) -> str:
    """``given`` when not None, else the first of ``env_vars`` set and not empty (checked:
    ``ValueError`` naming the variable), else ``default``."""
    if given is not None:
        return given
    for var in env_vars:
        value = os.environ.get(var)
        if value:
            field = f"{var} (from the environment)"
            check_endpoint(
                value, field=field, allow_insecure_http=allow_insecure_http, allow_user_info=False
            )
            return value
    return default


def join_url(base: str, path: str) -> str:
    """``base`` with ``path`` appended to its *path*: a query on ``base`` (Azure's
    ``?api-version=``) is kept, followed by any query of ``path``; no fragment.

    Every vendor builds its endpoint URLs here, once, at construction.
    """
    parts = urlsplit(base)
    tail, _, extra = path.partition("?")
    query = "&".join(q for q in (parts.query, extra) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + tail, query, ""))
