"""Which wire answers a path on the simulated server, and what a route refuses unseen.

One :class:`~providers.simulator.wires.base.Wire` per wire format; :func:`wire_for`
picks it by path, :data:`BY_ROUTE` by route name, and :func:`refused` answers a
request the platform would turn away before it counts (Azure without a key or
``api-version``, Vertex AI without its bearer token, Bedrock without a valid SigV4
signature).
"""

from __future__ import annotations

from providers.simulator.http11 import Exchange
from providers.simulator.respond import send_json
from providers.simulator.sigv4 import refuse_unsigned
from providers.simulator.wires.anthropic import AnthropicWire
from providers.simulator.wires.azure import AzureWire
from providers.simulator.wires.base import Wire
from providers.simulator.wires.bedrock import BedrockWire, model_and_operation
from providers.simulator.wires.bedrock_invoke import BedrockInvokeWire
from providers.simulator.wires.gemini import GeminiWire
from providers.simulator.wires.http import HTTPWire
from providers.simulator.wires.openai import OpenAIWire
from providers.simulator.wires.responses import ResponsesWire
from providers.simulator.wires.vertex import VERTEX_WIRES, vertex_wire

__all__ = ["BY_ROUTE", "refused", "wire_for"]

_WIRES: dict[str, Wire] = {
    "/openai/v1/chat/completions": OpenAIWire(),
    "/openai/v1/responses": ResponsesWire(),
    "/anthropic/v1/messages": AnthropicWire(),
    "/http/complete": HTTPWire(),
}
_GEMINI = GeminiWire()
_AZURE = AzureWire()
_BEDROCK = BedrockWire()
_BEDROCK_INVOKE = BedrockInvokeWire()
_BEDROCK_OPS: dict[str, Wire] = {
    "converse": _BEDROCK,
    "converse-stream": _BEDROCK,
    "invoke": _BEDROCK_INVOKE,
    "invoke-with-response-stream": _BEDROCK_INVOKE,
}
#: The wire of each route (Bedrock's: Converse, for reading what a request offered).
BY_ROUTE: dict[str, Wire] = {
    w.route: w for w in (*_WIRES.values(), _GEMINI, _AZURE, _BEDROCK, *VERTEX_WIRES)
}
_GEMINI_METHODS = (":generateContent", ":streamGenerateContent")


def wire_for(path: str) -> Wire | None:
    """The wire that serves ``path`` (decoded), or None."""
    wire = _WIRES.get(path)
    if wire is not None:
        return wire
    if path.startswith("/gemini/") and "/models/" in path and path.endswith(_GEMINI_METHODS):
        return _GEMINI
    if _AZURE.serves(path):
        return _AZURE
    found = model_and_operation(path)
    return _BEDROCK_OPS.get(found[1]) if found else vertex_wire(path)


def refused(ex: Exchange, wire: Wire, *, aws_key: tuple[str, str], token: str) -> bool:
    """Answer what the platform answers a request it turns away unseen (True when so):
    ``aws_key`` is the (access key id, secret) Bedrock signatures are checked with,
    ``token`` the bearer token Vertex AI's routes require."""
    if wire.route == "bedrock":
        return refuse_unsigned(ex, access_key=aws_key[0], secret_key=aws_key[1])
    refusal = wire.refusal(ex.path, ex.query, ex.headers, token)
    if refusal is not None:
        send_json(ex, *refusal)
    return refusal is not None
