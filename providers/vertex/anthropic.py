"""``VertexAnthropic``: Claude on Google Vertex AI, over the Anthropic Messages wire.

The body, the replies, the streams and Anthropic's own errors are
:class:`~providers.anthropic.AnthropicMessages`'; what differs is the URL
(``POST {root}/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict``,
``:streamRawPredict`` for a stream), the body (``anthropic_version`` in it, no
``model``), Google's OAuth token and Google's own errors
(:mod:`providers.vertex.platform`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Unpack

from orchestrator.config.spec import BuildContext, given
from orchestrator.types import Request
from providers.anthropic import AnthropicMessages, AnthropicSpec
from providers.http.prefill import prefill_default
from providers.vertex.platform import VertexPlatform, VertexSettings, VertexSpec

__all__ = ["VERTEX_ANTHROPIC_VERSION", "VertexAnthropic", "VertexAnthropicSpec"]

#: The ``anthropic_version`` Vertex AI's Claude models take (in the body, not a header).
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"


class VertexAnthropic(VertexPlatform, AnthropicMessages):
    """A Claude model on Vertex AI, in one location (one region, or ``global``).

    ``VertexAnthropic("claude-sonnet-4-6", project="my-proj", location="us-east5")``
    posts to ``https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/
    locations/us-east5/publishers/anthropic/models/claude-sonnet-4-6:rawPredict``.
    ``project`` defaults to ``$GOOGLE_CLOUD_PROJECT`` (then
    ``$ANTHROPIC_VERTEX_PROJECT_ID``), ``location`` to ``$GOOGLE_CLOUD_LOCATION`` (then
    ``$CLOUD_ML_REGION``), and the API root (``base_url=``, ending in ``/v1``) to
    ``$ANTHROPIC_VERTEX_BASE_URL``, then ``$VERTEX_BASE_URL``.

    The token: ``access_token=`` (``api_key=`` is the same), a google-auth
    ``credentials=`` object, ``$GOOGLE_OAUTH_ACCESS_TOKEN``, else application default
    credentials (the ``[gcp]`` extra), refreshed on a worker thread before they expire.
    """

    publisher = "anthropic"
    project_vars = ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID")
    location_vars = ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION")
    base_url_vars: ClassVar[tuple[str, ...]] = ("ANTHROPIC_VERTEX_BASE_URL", "VERTEX_BASE_URL")

    endpoints = (":rawPredict", ":streamRawPredict")

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = 1024,
        anthropic_version: str = VERTEX_ANTHROPIC_VERSION,
        **settings: Unpack[VertexSettings],
    ) -> None:
        if settings.get("accepts_prefill") is None and isinstance(model, str):
            settings["accepts_prefill"] = prefill_default("anthropic", model)  # Claude's rule
        super().__init__(
            model, max_tokens=max_tokens, anthropic_version=anthropic_version, **settings
        )

    def payload(self, request: Request, *, stream: bool) -> tuple[dict[str, Any], Any, str | None]:
        """The Messages body as Vertex takes it: the model is in the URL, the version here."""
        body, prefill, answer = super().payload(request, stream=stream)
        del body["model"]
        body["anthropic_version"] = self.anthropic_version
        return body, prefill, answer


# -- the chain file's ``type: vertex_anthropic`` ---------------------------------------


class VertexAnthropicSpec(VertexSpec, AnthropicSpec):
    """``type: vertex_anthropic`` in a chain file: a :class:`VertexAnthropic`."""

    order = 36  # after Azure, before the generic types
    type: Literal["vertex_anthropic"]  # type: ignore[assignment]

    def build(self, ctx: BuildContext) -> VertexAnthropic:
        return VertexAnthropic(
            self.model,
            name=ctx.name,
            **self.vendor_kwargs(),
            **self.where_kwargs(),
            **given(max_tokens=self.max_tokens, anthropic_version=self.anthropic_version),
        )
