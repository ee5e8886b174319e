"""The chain-file keys every HTTP vendor type shares (``openai``, ``anthropic``, ``gemini``).

Each vendor module subclasses :class:`VendorSpec` with its ``type`` and own
keys, and builds its provider from :meth:`VendorSpec.vendor_kwargs`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationInfo, field_validator

from orchestrator.config.spec import (
    Flag,
    Name,
    PositiveFloat,
    PositiveInt,
    Price,
    ProviderSpec,
    given,
    value_problem,
)
from orchestrator.secrets import Secret, endpoint_problem

__all__ = ["FILE_OPT_IN", "Transport", "VendorSpec", "check_url"]

#: A chain file's ``transport:`` values (``providers.http.client.TRANSPORTS``).
Transport = Literal["aiohttp", "reqwest"]

#: How a chain file allows plain http to another machine (the wording of the refusal).
FILE_OPT_IN = "set allow_insecure_http: true on this provider"


def check_url(url: str, info: ValidationInfo, *, allow_user_info: bool) -> str:
    """``url`` when it may be an endpoint, under the entry's ``allow_insecure_http``.

    ``allow_insecure_http`` must be declared before the URL field; when it is
    itself invalid, its own error is enough and the URL is not checked.
    """
    if "allow_insecure_http" not in info.data:
        return url
    problem = endpoint_problem(
        url,
        allow_insecure_http=info.data["allow_insecure_http"],
        allow_user_info=allow_user_info,
        opt_in=FILE_OPT_IN,
    )
    if problem is not None:
        raise value_problem(problem)
    return url


class VendorSpec(ProviderSpec):
    """``model``, the endpoint, the key (from the environment), the reply limits, and
    the price and context window (given, else from the model catalogue)."""

    allow_insecure_http: Flag = False
    model: Name
    base_url: str | None = None
    api_key: str | None = None
    timeout: PositiveFloat | None = None
    first_token_timeout: PositiveFloat | None = None
    idle_timeout: PositiveFloat | None = None
    max_response_bytes: PositiveInt | None = None
    price: Price | None = None
    context_window: PositiveInt | None = None
    catalogue: Flag | None = None
    headers: dict[str, str] | None = None
    accepts_prefill: Flag | None = None
    #: The HTTP library: ``aiohttp`` (default) or ``reqwest`` (the ``[fast]`` extra).
    transport: Transport | None = None

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, url: str | None, info: ValidationInfo) -> str | None:
        return None if url is None else check_url(url, info, allow_user_info=False)

    def vendor_kwargs(self) -> dict[str, Any]:
        """The keyword arguments every vendor provider takes, as the file set them."""
        return {
            "allow_insecure_http": self.allow_insecure_http,
            **given(
                base_url=self.base_url,
                api_key=None if self.api_key is None else Secret(self.api_key),
                timeout=self.timeout,
                first_token_timeout=self.first_token_timeout,
                idle_timeout=self.idle_timeout,
                max_response_bytes=self.max_response_bytes,
                price=self.price,
                context_window=self.context_window,
                catalogue=self.catalogue,
                extra_headers=self.headers,
                accepts_prefill=self.accepts_prefill,
                transport=self.transport,
            ),
        }
