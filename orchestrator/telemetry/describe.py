"""What a provider tells telemetry about itself, and prompts and replies as (opt-in) attributes.

A provider describes itself through plain attributes, all optional, so the core
never imports a provider package:

==========================  ==================================================
``gen_ai_provider_name``    ``gen_ai.provider.name`` (``openai``, ``anthropic``,
                            ``gcp.gemini``...); vendor HTTP providers set it
``gen_ai_operation_name``   ``gen_ai.operation.name`` (default ``chat``)
``model``                   ``gen_ai.request.model``
``base_url`` (or ``url``)   ``server.address`` and ``server.port`` (only the
                            host and port are read: never user info or query)
``region``                  ``cloud.region`` (a cloud platform's region or
                            location: Vertex AI, Azure OpenAI, Bedrock)
==========================  ==================================================
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from orchestrator.secrets import scrub
from orchestrator.telemetry import names as n
from orchestrator.types import Request, Response

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_NAME_CHARS",
    "input_messages",
    "output_messages",
    "provider_attributes",
    "reply_name",
]

#: Captured text per message part, and messages per request, at most (a span is not a log).
MAX_CONTENT_CHARS = 8192
MAX_MESSAGES = 64

#: A name a reply gives (``gen_ai.response.model``) is cut to this many characters.
MAX_NAME_CHARS = 256

_DEFAULT_PORTS = {"http": 80, "https": 443}


def reply_name(text: str) -> str:
    """A name from a server's reply (its model), as a span may carry it: at most
    :data:`MAX_NAME_CHARS` characters, control and bidi characters as ``?``."""
    if len(text) <= MAX_NAME_CHARS and text.isascii() and text.isprintable():
        return text  # the usual case, checked without a regex
    return scrub(text[:MAX_NAME_CHARS])


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def provider_attributes(provider: Any) -> dict[str, str | int]:
    """The attributes every attempt span of ``provider`` carries (computed once per agent).

    The engine may call a provider through a view (under deadlines, in a hedge lane):
    a view names the provider it wraps as ``wrapped``, and the provider is described.
    """
    for _ in range(8):  # views wrap views (a hedge lane of a watched provider); bounded
        inner = getattr(provider, "wrapped", None)
        if inner is None:
            break
        provider = inner
    attrs: dict[str, str | int] = {
        n.OPERATION_NAME: _text(getattr(provider, "gen_ai_operation_name", None)) or "chat",
        n.PROVIDER: str(provider.name),
    }
    system = _text(getattr(provider, "gen_ai_provider_name", None))
    if system:
        attrs[n.PROVIDER_NAME] = system
    model = _text(getattr(provider, "model", None))
    if model:
        attrs[n.REQUEST_MODEL] = model
    region = _text(getattr(provider, "region", None))
    if region:
        attrs[n.CLOUD_REGION] = reply_name(region)  # bounded and printable, as a name
    url = _text(getattr(provider, "base_url", None)) or _text(getattr(provider, "url", None))
    if url:
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            host = port = None
        if host:
            attrs[n.SERVER_ADDRESS] = host
            if port:
                attrs[n.SERVER_PORT] = port
    return attrs


def span_name(attrs: dict[str, str | int]) -> str:
    """``{gen_ai.operation.name} {gen_ai.request.model}`` (the model omitted when unknown)."""
    model = attrs.get(n.REQUEST_MODEL)
    op = str(attrs[n.OPERATION_NAME])
    return f"{op} {model}" if model else op


def _part(text: str) -> dict[str, str]:
    return {"type": "text", "content": text[:MAX_CONTENT_CHARS]}


def input_messages(request: Request) -> str:
    """``gen_ai.input.messages``: the request's messages as GenAI JSON (bounded)."""
    out = [{"role": m.role, "parts": [_part(m.content)]} for m in request.messages[-MAX_MESSAGES:]]
    return json.dumps(out, ensure_ascii=False)


def output_messages(response: Response) -> str:
    """``gen_ai.output.messages``: the reply's text and tool calls as GenAI JSON (bounded)."""
    parts: list[dict[str, Any]] = [_part(response.text)] if response.text else []
    for call in response.tool_calls[:MAX_MESSAGES]:
        parts.append({"type": "tool_call", "id": call.id, "name": call.name})
    message = {"role": "assistant", "parts": parts, "finish_reason": response.finish_reason or ""}
    return json.dumps([message], ensure_ascii=False)
