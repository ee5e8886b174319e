"""Azure OpenAI's Chat Completions, as the simulated server speaks it (route ``azure``).

The OpenAI wire with Azure's differences: the routes
``/azure/openai/deployments/{deployment}/chat/completions?api-version=...`` (the
version required) and ``/azure/openai/v1/chat/completions`` (the deployment as
``model``); the key in an ``api-key`` header or an Entra ID ``Authorization:
Bearer`` token (either required); content-filter annotations on replies and
stream chunks; a blocked prompt answered ``400 content_filter``; and Azure's own
error codes (``DeploymentNotFound``, ``429`` with "Please retry after N seconds").
The rate-limit headers (``retry-after``, ``retry-after-ms``) are the server's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import Call, Tokens, dumps
from providers.simulator.wires.openai import OpenAIWire

__all__ = ["AzureWire"]

PREFIX = "/azure/openai/"
_CHAT = "/chat/completions"
_V1 = PREFIX + "v1" + _CHAT
_DEPLOYMENTS = PREFIX + "deployments/"

_SAFE = {
    category: {"filtered": False, "severity": "safe"}
    for category in ("hate", "self_harm", "sexual", "violence")
}
_RETRY = "Please retry after 1 second."
# kind -> (code, message), for the kinds whose Azure body differs from OpenAI's.
_ERRORS: dict[str, tuple[str, str]] = {
    "rate_limited": (
        "429",
        "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version "
        f"{{version}} have exceeded token rate limit of your current OpenAI S0 pricing tier. "
        f"{_RETRY} Please go here: https://aka.ms/oai/quotaincrease if you would like to "
        "further increase the default rate limit.",
    ),
    "quota": (
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    "server_error": (
        "InternalServerError",
        "The service is temporarily unable to process your request. Please try again later.",
    ),
    "overloaded": (
        "ServiceUnavailable",
        "The service is temporarily unable to process your request. Please try again later.",
    ),
    "auth": (
        "401",
        "Access denied due to invalid subscription key or wrong API endpoint. Make sure to "
        "provide a valid key for an active subscription and use a correct regional API "
        "endpoint for your resource.",
    ),
    "forbidden": ("PermissionDenied", "Principal does not have access to API/Operation."),
    "model_not_found": (
        "DeploymentNotFound",
        "The API deployment for this resource does not exist. If you created the deployment "
        "within the last 5 minutes, please wait a moment and try again.",
    ),
}


def _deployment(path: str) -> str | None:
    """The deployment a deployment-style ``path`` names, else None."""
    if not (path.startswith(_DEPLOYMENTS) and path.endswith(_CHAT)):
        return None
    name = path[len(_DEPLOYMENTS) : -len(_CHAT)]
    return name if name and "/" not in name else None


class AzureWire(OpenAIWire):
    """Azure OpenAI Chat Completions (``POST /azure/openai/...``)."""

    route = "azure"

    @staticmethod
    def serves(path: str) -> bool:
        """Whether ``path`` is one of Azure's chat routes."""
        return path == _V1 or _deployment(path) is not None

    def refusal(
        self, path: str, query: Mapping[str, str], headers: Mapping[str, str], token: str
    ) -> tuple[int, dict[str, Any]] | None:
        """Azure's answer to a request without credentials or, deployment-style,
        without ``api-version`` (None when the request may proceed)."""
        bearer = headers.get("authorization", "").startswith("Bearer ")
        if not headers.get("api-key") and not bearer:
            return 401, {"error": {"code": "401", "message": _ERRORS["auth"][1]}}
        if _deployment(path) is not None and not query.get("api-version"):
            return 404, {"error": {"code": "404", "message": "Resource not found"}}
        return None

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        call = super().parse(body, path, query, seq)
        call.model = _deployment(path) or call.model
        call.body = {**body, "api-version": query.get("api-version", "v1")}
        return call

    def _completion(
        self, call: Call, message: dict[str, Any] | None, finish: str, usage: Tokens
    ) -> dict[str, Any]:
        out = super()._completion(call, message, finish, usage)
        out["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": _SAFE}]
        for choice in out["choices"]:
            choice["content_filter_results"] = {} if finish == "content_filter" else _SAFE
        return out

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        # Azure opens every stream with the prompt's filter results and no choices.
        head = {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _SAFE}],
        }
        first = b"data: " + dumps(head).encode() + b"\n\n"
        return [first, *super().stream(call, pieces, usage, terminate=terminate)]

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        if kind == "auth" and status == 403:
            kind = "forbidden"
        if kind not in _ERRORS:
            return super().error(kind, status, call)  # OpenAI's own body, passed through
        code, message = _ERRORS[kind]
        version = str(call.body.get("api-version", "v1"))
        return {"error": {"code": code, "message": message.format(version=version)}}

    def prompt_refusal(self, call: Call) -> dict[str, Any] | None:
        """The 400 Azure answers a prompt its content filter blocks."""
        return {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy. Please modify your prompt and retry.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        **_SAFE,
                        "violence": {"filtered": True, "severity": "high"},
                    },
                },
            }
        }
