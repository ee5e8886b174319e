"""Google Vertex AI: Claude (``VertexAnthropic``) and Gemini (``VertexGemini``) per location,
over their vendors' wires with Google's OAuth tokens (``auth``; the ``[gcp]`` extra)."""

from __future__ import annotations

from providers.vertex.anthropic import VertexAnthropic
from providers.vertex.gemini import VertexGemini

__all__ = ["VertexAnthropic", "VertexGemini"]
