"""A request for a path the gateway does not serve: most often an SDK's base URL of the wrong
shape. The OpenAI SDKs want the base URL with ``/v1`` (they add ``/chat/completions``), the
Anthropic SDKs want it without (they add ``/v1/messages``); the other way round each gets a
bare 404 it cannot explain. :func:`misrouted` guesses the client's wire format from the
path and headers and says which base URL to use, naming no part of the request.
"""

from __future__ import annotations

import re

from providers.serve.exchange import Exchange
from providers.serve.failures import Failure

__all__ = ["misrouted"]

#: A Host header worth repeating: a name or an address and a port, nothing else.
_HOST = re.compile(r"[A-Za-z0-9.\-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?")
_ANTHROPIC_TAILS = ("/messages", "/messages/count_tokens")
_POST_ONLY = frozenset(
    {"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens"}
)
_OPENAI_TAILS = ("/chat/completions", "/responses", "/models", "/completions", "/embeddings")


def _origin(ex: Exchange) -> str:
    """``http://host:port`` as the client reached the gateway (the socket's when the Host
    header is not a plain host)."""
    host = ex.header("host") or ""
    if not _HOST.fullmatch(host):
        local = ex.local()
        host = f"{local[0]}:{local[1]}" if local else "HOST:PORT"
    return f"{ex.scheme}://{host}"


def misrouted(ex: Exchange) -> tuple[str, Failure]:
    """The wire format to answer in (``openai``, ``responses`` or ``anthropic``) and a 404
    naming the base URL that client should use."""
    path = ex.path.rstrip("/")
    anthropic = ex.header("anthropic-version") is not None or path.endswith(_ANTHROPIC_TAILS)
    if path in _POST_ONLY:  # a known route, another method
        wire = "anthropic" if anthropic else "responses" if path == "/v1/responses" else "openai"
        return wire, Failure(405, "invalid_request", f"{path} takes POST")
    origin = _origin(ex)
    if anthropic:
        return "anthropic", Failure(
            404,
            "not_found",
            f"no such route; Anthropic clients use base_url {origin} "
            "(without /v1: the SDK adds /v1/messages)",
        )
    wire = "responses" if path.endswith("/responses") else "openai"
    if path.endswith(_OPENAI_TAILS):
        message = (
            f"no such route; OpenAI clients use base_url {origin}/v1 "
            "(with /v1: the SDK adds /chat/completions)"
        )
    else:
        message = (
            f"no such route; OpenAI clients use base_url {origin}/v1, Anthropic clients {origin}"
        )
    return wire, Failure(404, "not_found", message)
