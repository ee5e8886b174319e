"""Gemini: ``GeminiGenerate`` (``client``) and the JSON-schema dialect it needs (``schema``)."""

from __future__ import annotations

from providers.gemini.client import GeminiGenerate

__all__ = ["GeminiGenerate"]
