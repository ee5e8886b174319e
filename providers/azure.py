"""``AzureOpenAI``: an Azure OpenAI deployment, over the Chat Completions wire of ``OpenAIChat``.

The wire, the reply parsing, the streams and the error table are
:class:`~providers.openai.OpenAIChat`'s (Azure's own codes are in
:data:`providers.http.errors.ERROR_CODES`); what differs is the URL, the
``api-key`` header or a Microsoft Entra ID bearer token, and the name. Entra ID
tokens come from ``azure-identity`` (the ``[azure]`` extra), imported only when a
credential is asked for.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Literal, Unpack
from urllib.parse import quote, urlsplit

from pydantic import ValidationInfo, field_validator

from orchestrator.config.spec import BuildContext, Name, given, value_problem
from orchestrator.errors import NotInstalled
from orchestrator.secrets import Secret
from orchestrator.types import Request, Response
from providers.http.base import VendorSettings
from providers.http.bearer import BearerToken
from providers.http.spec import check_url
from providers.http.sse import SSEEvent
from providers.openai import OpenAIChat, OpenAISpec

__all__ = ["ENTRA_SCOPE", "AzureOpenAI", "AzureOpenAISpec"]

#: The Entra ID scope of Azure OpenAI (Cognitive Services) tokens.
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
_EXTRA = "pip install 'failover-orchestrator[azure]'"
_RESOURCE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}", re.IGNORECASE)
_DEPLOYMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_AZURE_HOSTS = ("openai.azure.com", "cognitiveservices.azure.com", "services.ai.azure.com")
_API_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}(?:-preview)?|v1|preview|latest")
#: Azure regions with Azure OpenAI: a resource named ``*-{region}`` is taken to be there.
_REGION_NAMES = (
    "eastus eastus2 westus westus3 northcentralus southcentralus canadaeast brazilsouth "
    "swedencentral norwayeast francecentral germanywestcentral switzerlandnorth uksouth "
    "westeurope polandcentral italynorth spaincentral australiaeast japaneast koreacentral "
    "southindia southeastasia uaenorth southafricanorth"
)
_REGIONS = frozenset(_REGION_NAMES.split())


def _endpoint(resource: str | None, endpoint: str | None) -> str:
    """``https://{resource}.openai.azure.com``, ``endpoint``, or ``$AZURE_OPENAI_ENDPOINT``."""
    if resource is not None and endpoint is not None:
        raise ValueError("AzureOpenAI: give resource= or endpoint=, not both")
    if resource is not None:
        if not isinstance(resource, str) or not _RESOURCE.fullmatch(resource):
            raise ValueError(
                f"AzureOpenAI.resource={resource!r} must be an Azure resource name "
                "(letters, digits and '-', at most 63), e.g. 'contoso-eastus2'"
            )
        return f"https://{resource}.openai.azure.com"
    endpoint = endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT")
    if not endpoint:
        raise ValueError(
            "AzureOpenAI: give resource= (e.g. 'contoso-eastus2'), endpoint= "
            "(https://contoso-eastus2.openai.azure.com) or set AZURE_OPENAI_ENDPOINT"
        )
    return endpoint.rstrip("/").removesuffix("/openai").removesuffix("/openai/v1")


def _base_url(endpoint: str, deployment: str, api_version: str | None) -> str:
    """The deployment-style URL for a dated ``api_version``, else the v1 one."""
    if not isinstance(deployment, str) or not _DEPLOYMENT.fullmatch(deployment):
        raise ValueError(
            f"AzureOpenAI.deployment={deployment!r} must be a deployment name "
            "(letters, digits, '.', '_' and '-', at most 64)"
        )
    if api_version is None or api_version == "v1":
        return f"{endpoint}/openai/v1"
    if not isinstance(api_version, str) or not _API_VERSION.fullmatch(api_version):
        raise ValueError(
            f"AzureOpenAI.api_version={api_version!r}: use a dated version such as "
            "'2024-10-21' or '2025-04-01-preview', or 'v1' (None) for the v1 API"
        )
    if api_version in ("preview", "latest"):
        return f"{endpoint}/openai/v1?api-version={api_version}"
    return f"{endpoint}/openai/deployments/{quote(deployment)}?api-version={api_version}"


def _resource_of(netloc: str) -> str:
    """The resource an Azure host names (``contoso.openai.azure.com``), else the host."""
    first, _, rest = netloc.partition(".")
    return first if rest in _AZURE_HOSTS else netloc


def _region(region: str | None, resource: str | None) -> str | None:
    """``region``, else the region a resource's name ends in (``contoso-eastus2``), else None."""
    if region is not None:
        if not isinstance(region, str) or not _RESOURCE.fullmatch(region):
            raise ValueError(f"AzureOpenAI.region={region!r} must be an Azure region name")
        return region
    last = (resource or "").rsplit("-", 1)[-1].lower()
    return last if last in _REGIONS else None


def default_credential() -> Any:
    """azure-identity's ``DefaultAzureCredential`` (environment, workload identity,
    managed identity, Azure CLI...); ``NotInstalled`` naming the extra without it."""
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise NotInstalled(
            f"credential='default' needs azure-identity: {_EXTRA}", provider="azure"
        ) from None
    return DefaultAzureCredential()


class AzureOpenAI(OpenAIChat):
    """A chat model deployed on Azure OpenAI, in one resource (one region).

    ``AzureOpenAI(deployment="gpt-4o-mini", resource="contoso-eastus2",
    api_version="2024-10-21")`` posts to
    ``https://contoso-eastus2.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions``;
    without ``api_version`` (or with ``"v1"``) to the v1 API (``/openai/v1/...``,
    the deployment sent as the model). ``endpoint=`` instead of ``resource=``
    for another host (``$AZURE_OPENAI_ENDPOINT`` when neither is given).

    The key goes in the ``api-key`` header (``api_key=`` or
    ``$AZURE_OPENAI_API_KEY``); or give ``credential=`` a sync azure-identity
    credential (``"default"`` builds ``DefaultAzureCredential``) for Entra ID
    bearer tokens, fetched on a worker thread and refreshed five minutes before
    they expire. ``model=`` names the underlying model for prices and the
    context window when the deployment's name is not one. ``region=`` (else the
    region a ``resource`` name ends in, as ``contoso-eastus2``) is ``cloud.region`` on
    its spans.
    """

    family = "azure"
    env_vars = ("AZURE_OPENAI_API_KEY",)

    def __init__(
        self,
        *,
        deployment: str,
        resource: str | None = None,
        endpoint: str | None = None,
        api_version: str | None = None,
        credential: Any = None,
        model: str | None = None,
        max_tokens_param: str = "max_tokens",
        region: str | None = None,
        **settings: Unpack[VendorSettings],
    ) -> None:
        base = _base_url(_endpoint(resource, endpoint), deployment, api_version)
        self.region = _region(region, resource)
        if credential is not None and settings.get("api_key") is not None:
            raise ValueError("AzureOpenAI: give api_key= or credential=, not both")
        where = resource or _resource_of(urlsplit(base).netloc)
        settings.setdefault("name", None)
        settings["name"] = settings["name"] or f"azure:{deployment}@{where}"
        super().__init__(
            model or deployment, base_url=base, max_tokens_param=max_tokens_param, **settings
        )
        self.deployment = deployment
        self.api_version = api_version
        self._token = None if credential is None else self._bearer(credential)

    def _bearer(self, credential: Any) -> BearerToken:
        if credential == "default":
            credential = default_credential()
        get_token = getattr(credential, "get_token", None)
        if not callable(get_token):
            raise TypeError("AzureOpenAI.credential: expected an azure-identity credential")
        if inspect.iscoroutinefunction(get_token):
            raise TypeError(
                "AzureOpenAI.credential: give a sync credential (azure.identity, "
                "not azure.identity.aio): its token is fetched on a worker thread"
            )

        def fetch() -> tuple[str, float]:
            token = get_token(ENTRA_SCOPE)
            return token.token, token.expires_on

        return BearerToken(fetch, what="Microsoft Entra ID", provider=self.name)

    def api_key(self) -> Secret:
        """The Entra ID token last fetched with a credential, else the key."""
        return super().api_key() if self._token is None else self._token.current()

    def auth_headers(self, key: Secret) -> dict[str, str]:
        if self._token is not None:
            return {"authorization": f"Bearer {key.reveal()}"}
        return {"api-key": key.reveal()}

    def payload(self, request: Request, *, stream: bool) -> dict[str, Any]:
        """The Chat Completions body, naming the deployment (the v1 API routes by it)."""
        body = super().payload(request, stream=stream)
        body["model"] = self.deployment
        return body

    async def complete(self, request: Request) -> Response:
        if self._token is not None:
            await self._token.get()
        return await super().complete(request)

    async def post_events(
        self, url: str, payload: Mapping[str, Any], *, plain: bool = False
    ) -> AsyncGenerator[list[SSEEvent], None]:
        if self._token is not None:  # the stream's own token, before its headers are built
            await self._token.get()
        return await super().post_events(url, payload, plain=plain)


# -- the chain file's ``type: azure_openai`` ----------------------------------------


class AzureOpenAISpec(OpenAISpec):
    """``type: azure_openai`` in a chain file: an :class:`AzureOpenAI` (``regions:`` lists
    resources, one per region: Azure names a deployment's place by its resource)."""

    order = 35  # after the direct vendors, before the generic types
    key_env = AzureOpenAI.env_vars[0]
    region_field = "resource"
    type: Literal["azure_openai"]  # type: ignore[assignment]
    model: Name | None = None  # type: ignore[assignment]
    deployment: Name
    resource: Name | None = None
    endpoint: str | None = None
    api_version: Name | None = None
    credential: Literal["default"] | None = None
    region: Name | None = None

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, url: str | None, info: ValidationInfo) -> str | None:
        if url is not None:
            raise value_problem("azure_openai takes resource: or endpoint:, not base_url:")
        return None

    @field_validator("endpoint")
    @classmethod
    def _azure_endpoint(cls, url: str | None, info: ValidationInfo) -> str | None:
        return None if url is None else check_url(url, info, allow_user_info=False)

    def build(self, ctx: BuildContext) -> AzureOpenAI:
        return AzureOpenAI(
            deployment=self.deployment,
            name=ctx.name,
            **self.vendor_kwargs(),
            **given(
                resource=self.resource,
                endpoint=self.endpoint,
                api_version=self.api_version,
                credential=self.credential,
                model=self.model,
                max_tokens_param=self.max_tokens_param,
                region=self.region,
            ),
        )
