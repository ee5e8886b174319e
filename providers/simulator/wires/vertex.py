"""Google Vertex AI as the simulated server speaks it (``vertex_anthropic``, ``vertex_gemini``).

``POST /vertex/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict``
(``:streamRawPredict``: SSE) speaks Anthropic's Messages with ``anthropic_version`` in the
body and the model in the URL; ``.../publishers/google/models/{m}:generateContent``
(``:streamGenerateContent?alt=sse``) speaks Gemini's. Both want ``Authorization: Bearer``
with the server's token (401 ``UNAUTHENTICATED`` otherwise, not counted). Google's own
errors (quota, permission, a model missing in the location) come in Google's shape on
both; an Anthropic model's own (overloaded, a bad request...) in Anthropic's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.anthropic import AnthropicWire
from providers.simulator.wires.base import Call, Wire
from providers.simulator.wires.gemini import GeminiWire

__all__ = ["VERTEX_WIRES", "VertexAnthropicWire", "VertexGeminiWire", "vertex_wire"]

_PREFIX = "/vertex/"
_PATH = re.compile(
    r"/vertex/v1(?:beta1)?/projects/[^/]+/locations/(?P<location>[a-z][a-z0-9-]*)"
    r"/publishers/(?P<publisher>anthropic|google)/models/(?P<model>[^/:]+)"
    r":(?P<method>rawPredict|streamRawPredict|generateContent|streamGenerateContent)"
)
_METHODS = {
    "anthropic": ("rawPredict", "streamRawPredict"),
    "google": ("generateContent", "streamGenerateContent"),
}
_UNAUTHENTICATED = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential. See "
    "https://developers.google.com/identity/sign-in/web/devconsole-project."
)
#: Vertex's wording where it differs from the Gemini API's.
_MESSAGES = {
    "rate_limited": "Quota exceeded for aiplatform.googleapis.com/"
    "online_prediction_requests_per_base_model with base model: {model}. Please submit a "
    "quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.",
    "auth": _UNAUTHENTICATED,
    "forbidden": "Permission 'aiplatform.endpoints.predict' denied on resource "
    "'//aiplatform.googleapis.com/projects/sim/locations/{location}/publishers/{publisher}"
    "/models/{model}' (or it may not exist).",
    "model_not_found": "Publisher Model `projects/sim/locations/{location}/publishers/"
    "{publisher}/models/{model}` not found.",
}
#: The faults Vertex itself answers on an Anthropic model (the rest are Claude's own).
_GOOGLE_KINDS = frozenset({"rate_limited", "quota", "auth", "model_not_found"})


def _match(path: str) -> re.Match[str] | None:
    found = _PATH.fullmatch(path)
    if found is None or found["method"] not in _METHODS[found["publisher"]]:
        return None
    return found


class _GoogleAuth(Wire):
    """Vertex's gate: ``Authorization: Bearer`` with the server's token, else Google's 401."""

    def refusal(
        self, path: str, query: Mapping[str, str], headers: Mapping[str, str], token: str
    ) -> tuple[int, dict[str, Any]] | None:
        if headers.get("authorization") == f"Bearer {token}":
            return None
        error = {"code": 401, "message": _UNAUTHENTICATED, "status": "UNAUTHENTICATED"}
        return 401, {"error": error}


class VertexGeminiWire(_GoogleAuth, GeminiWire):
    """Gemini on Vertex AI (``.../publishers/google/models/M:generateContent``)."""

    route = "vertex_gemini"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        call = super().parse(body, path, query, seq)
        found = _match(path)
        call.body = {**body, "location": found["location"] if found else ""}
        return call

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        out = super().error(kind, status, call)
        if kind == "auth" and status == 403:
            kind = "forbidden"
        if kind in _MESSAGES:
            publisher = "google" if call.route == self.route else "anthropic"
            location = str(call.body.get("location", ""))
            where = {"model": call.model, "location": location, "publisher": publisher}
            out["error"]["message"] = _MESSAGES[kind].format(**where)
        return out


_GOOGLE = VertexGeminiWire()


class VertexAnthropicWire(_GoogleAuth, AnthropicWire):
    """Claude on Vertex AI (``.../publishers/anthropic/models/M:rawPredict``)."""

    route = "vertex_anthropic"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        call = super().parse(body, path, query, seq)
        found = _match(path)
        if found is not None:
            call.model = found["model"]
            call.stream = found["method"] == "streamRawPredict"
            call.body = {**body, "location": found["location"]}
        return call

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        if kind in _GOOGLE_KINDS:
            return _GOOGLE.error(kind, status, call)
        return super().error(kind, status, call)


_WIRES: dict[str, Wire] = {"anthropic": VertexAnthropicWire(), "google": _GOOGLE}
#: The two Vertex routes' wires.
VERTEX_WIRES = tuple(_WIRES.values())


def vertex_wire(path: str) -> Wire | None:
    """The wire serving a Vertex ``path`` (by its publisher), else None."""
    if not path.startswith(_PREFIX):
        return None
    found = _match(path)
    return None if found is None else _WIRES[found["publisher"]]
