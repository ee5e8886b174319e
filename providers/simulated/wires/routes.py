"""Which wire serves a request path on the simulated server, and each route's wire."""

from __future__ import annotations

from providers.simulated.wires.anthropic import AnthropicWire
from providers.simulated.wires.azure import AzureWire
from providers.simulated.wires.base import Wire
from providers.simulated.wires.gemini import GeminiWire
from providers.simulated.wires.http import HTTPWire
from providers.simulated.wires.openai import OpenAIWire
from providers.simulated.wires.responses import ResponsesWire
from providers.simulated.wires.vertex import VERTEX_WIRES, vertex_wire

__all__ = ["BY_ROUTE", "wire_for"]

_WIRES: dict[str, Wire] = {
    "/openai/v1/chat/completions": OpenAIWire(),
    "/openai/v1/responses": ResponsesWire(),
    "/anthropic/v1/messages": AnthropicWire(),
    "/http/complete": HTTPWire(),
}
_GEMINI = GeminiWire()
_AZURE = AzureWire()
#: Each route's wire, by route name.
BY_ROUTE: dict[str, Wire] = {w.route: w for w in (*_WIRES.values(), _GEMINI, _AZURE, *VERTEX_WIRES)}
_GEMINI_METHODS = (":generateContent", ":streamGenerateContent")


def wire_for(path: str) -> Wire | None:
    """The wire serving ``path``, else None (a control route or no route)."""
    wire = _WIRES.get(path)
    if wire is not None:
        return wire
    if path.startswith("/gemini/") and "/models/" in path and path.endswith(_GEMINI_METHODS):
        return _GEMINI
    if _AZURE.serves(path):
        return _AZURE
    return vertex_wire(path)
