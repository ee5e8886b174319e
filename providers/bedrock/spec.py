"""The chain file's ``type: bedrock``: a :class:`~providers.bedrock.BedrockConverse`."""

from __future__ import annotations

from typing import Literal

from pydantic import ValidationInfo, field_validator

from orchestrator.config.spec import BuildContext, Name, PositiveInt, given, value_problem
from providers.bedrock.client import BedrockConverse
from providers.http.spec import VendorSpec, check_url

__all__ = ["BedrockSpec"]

_REFUSED = {
    "base_url": "bedrock takes region: or endpoint_url:, not base_url:",
    "api_key": "bedrock signs with AWS credentials (the AWS chain): no api_key:",
}


class BedrockSpec(VendorSpec):
    """``type: bedrock`` with ``model`` (a model id or inference profile), ``region``,
    optional ``profile`` and ``endpoint_url``; credentials from the AWS chain."""

    order = 36  # after Azure, before the generic types
    type: Literal["bedrock"]
    region: Name | None = None
    profile: Name | None = None
    endpoint_url: str | None = None
    max_tokens: PositiveInt | None = None
    cache_points: list[Literal["system", "tools", "messages"]] | None = None

    @field_validator("base_url", "api_key")
    @classmethod
    def _endpoint(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            raise value_problem(_REFUSED[str(info.field_name)])
        return None

    @field_validator("endpoint_url")
    @classmethod
    def _bedrock_endpoint(cls, url: str | None, info: ValidationInfo) -> str | None:
        return None if url is None else check_url(url, info, allow_user_info=False)

    def build(self, ctx: BuildContext) -> BedrockConverse:
        return BedrockConverse(
            self.model,
            name=ctx.name,
            **self.vendor_kwargs(),
            **given(
                region=self.region,
                profile=self.profile,
                endpoint_url=self.endpoint_url,
                max_tokens=self.max_tokens,
                cache_points=self.cache_points,
            ),
        )
