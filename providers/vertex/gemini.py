"""``VertexGemini``: Gemini on Google Vertex AI, over the ``generateContent`` wire.

The body, the replies, the streams and the error reader are
:class:`~providers.gemini.GeminiGenerate`'s; what differs is the URL
(``POST {root}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent``
and ``:streamGenerateContent?alt=sse``) and Google's OAuth token instead of an API key
(:mod:`providers.vertex.platform`).
"""

from __future__ import annotations

from typing import ClassVar, Literal, Unpack

from orchestrator.config.spec import BuildContext
from providers.gemini.client import GeminiGenerate, GeminiSpec
from providers.vertex.platform import VertexPlatform, VertexSettings, VertexSpec

__all__ = ["VertexGemini", "VertexGeminiSpec"]


class VertexGemini(VertexPlatform, GeminiGenerate):
    """A Gemini model on Vertex AI, in one location (one region, or ``global``).

    ``VertexGemini("gemini-2.5-flash", project="my-proj", location="europe-west1")``
    posts to ``https://europe-west1-aiplatform.googleapis.com/v1/projects/my-proj/
    locations/europe-west1/publishers/google/models/gemini-2.5-flash:generateContent``.
    ``project`` defaults to ``$GOOGLE_CLOUD_PROJECT``, ``location`` to
    ``$GOOGLE_CLOUD_LOCATION`` and the API root (``base_url=``, ending in ``/v1``) to
    ``$VERTEX_BASE_URL``. The token as for
    :class:`~providers.vertex.anthropic.VertexAnthropic`.
    """

    publisher = "google"
    base_url_vars: ClassVar[tuple[str, ...]] = ("VERTEX_BASE_URL",)

    endpoints = (":generateContent", ":streamGenerateContent?alt=sse")

    def __init__(self, model: str, **settings: Unpack[VertexSettings]) -> None:
        super().__init__(
            model.removeprefix("models/") if isinstance(model, str) else model, **settings
        )


# -- the chain file's ``type: vertex_gemini`` ------------------------------------------


class VertexGeminiSpec(VertexSpec, GeminiSpec):
    """``type: vertex_gemini`` in a chain file: a :class:`VertexGemini`."""

    order = 37
    type: Literal["vertex_gemini"]  # type: ignore[assignment]

    def build(self, ctx: BuildContext) -> VertexGemini:
        return VertexGemini(
            self.model, name=ctx.name, **self.vendor_kwargs(), **self.where_kwargs()
        )
