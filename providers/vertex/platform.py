"""What the Vertex AI providers share over their vendor's wire: the URL, Google's token, the
errors, the name, and what telemetry reads (``gen_ai.provider.name``, ``cloud.region``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from orchestrator.config.spec import Name, ProviderSpec, given
from orchestrator.errors import ProviderError
from orchestrator.secrets import Secret
from providers.http.base import VendorProvider, VendorSettings, join_url
from providers.http.endpoint import base_url_from_env
from providers.http.errors import map_vertex_error
from providers.http.sse import SSEEvent
from providers.vertex.auth import TOKEN_ENV, GoogleToken, model_path, vertex_base_url

__all__ = ["VertexPlatform", "VertexSettings", "VertexSpec", "Where", "token_or_key"]


class VertexSettings(VendorSettings, total=False):
    """The keyword arguments both Vertex providers take besides ``model`` and their
    vendor's own (see :class:`VertexPlatform`)."""

    project: str | None
    location: str | None
    credentials: Any
    access_token: str | Secret | None
    base_url: str | None


def token_or_key(access_token: str | Secret | None, settings: dict[str, Any]) -> Any:
    """``access_token``, or ``api_key`` (a chain file's ``api_key: ${VAR}``) standing for it."""
    key = settings.pop("api_key", None)
    if key is not None and access_token is not None:
        raise ValueError("Vertex AI: give access_token= or api_key=, not both")
    return access_token if access_token is not None else key


@dataclass(frozen=True, slots=True)
class Where:
    """A Vertex model's project, location, API root and model path (checked)."""

    project: str
    location: str
    base_url: str
    path: str


class VertexPlatform(VendorProvider):
    """Base of ``VertexAnthropic`` and ``VertexGemini``: put it before the vendor class.

    Its ``__init__`` takes the keywords both share (``project``, ``location``,
    ``credentials``, ``access_token``, ``base_url``) and passes the rest on to the
    vendor's (cooperatively: the subclass's own keywords come first), then signs with
    Google's token and sets the URLs from ``Where.path`` and :attr:`endpoints`.
    """

    family = "vertex"  # the catalogue's "google" entry, which lists Anthropic's models too
    env_vars: ClassVar[tuple[str, ...]] = (TOKEN_ENV,)
    #: ``publishers/{publisher}`` in the URL, and whose error bodies pass through.
    publisher: ClassVar[str] = ""
    project_vars: ClassVar[tuple[str, ...]] = ("GOOGLE_CLOUD_PROJECT",)
    location_vars: ClassVar[tuple[str, ...]] = ("GOOGLE_CLOUD_LOCATION",)

    #: What follows the model's path in the URL: for a call, for a stream.
    endpoints: ClassVar[tuple[str, str]] = ("", "")

    project: str
    location: str
    region: str
    _google: GoogleToken

    def __init__(
        self,
        model: str,
        *,
        project: str | None = None,
        location: str | None = None,
        credentials: Any = None,
        access_token: str | Secret | None = None,
        base_url: str | None = None,
        **settings: Any,
    ) -> None:
        access_token = token_or_key(access_token, settings)
        where = self.where(model, project, location, base_url, settings)
        super().__init__(model, base_url=where.base_url, **settings)
        self.sign_with(where, access_token, credentials)
        call, stream = self.endpoints
        self._url = join_url(self.base_url, f"{where.path}{call}")
        self._stream_url = join_url(self.base_url, f"{where.path}{stream}")

    @classmethod
    def where(
        cls,
        model: str,
        project: str | None,
        location: str | None,
        base_url: str | None,
        settings: dict[str, Any],
    ) -> Where:
        """Check where the model is, choose its API root (``base_url``, else the first
        of ``base_url_vars`` set, else Google's host for the location) and name the
        provider ``vertex:{model}@{location}`` unless ``settings`` names it."""
        envs = (cls.project_vars, cls.location_vars)
        project, location, path = model_path(
            cls.__name__, cls.publisher, model, project, location, env=envs
        )
        root = base_url_from_env(
            base_url,
            cls.base_url_vars,
            vertex_base_url(location),
            allow_insecure_http=bool(settings.get("allow_insecure_http")),
        )
        settings["name"] = settings.get("name") or f"vertex:{model}@{location}"
        return Where(project, location, root, path)

    def sign_with(self, where: Where, access_token: str | Secret | None, credentials: Any) -> None:
        """Keep where the model is and where its token comes from."""
        self.project, self.location = where.project, where.location
        self.region = where.location  # cloud.region on this provider's spans
        self._google = GoogleToken(
            access_token=access_token, credentials=credentials, provider=self.name
        )

    @property
    def gen_ai_provider_name(self) -> str:
        return "gcp.vertex_ai"

    def __repr__(self) -> str:
        cls = type(self).__name__
        return (
            f"{cls}(model={self.model!r}, name={self.name!r}, project={self.project!r}, "
            f"location={self.location!r})"
        )

    def api_key(self) -> Secret:
        """The OAuth token to send (see :mod:`providers.vertex.auth` for where it comes from)."""
        return self._google.current()

    def secrets(self) -> tuple[Secret, ...]:
        given = self._google.given
        return super().secrets() + ((given,) if given is not None else ())

    def auth_headers(self, key: Secret) -> dict[str, str]:
        return {"authorization": f"Bearer {key.reveal()}"}

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        return map_vertex_error(
            status, headers, body, publisher=self.publisher, provider=self.name, key=self.secrets()
        )

    async def post_json(self, url: str, payload: Mapping[str, Any], *, plain: bool = False) -> Any:
        await self._google.ready()
        return await super().post_json(url, payload, plain=plain)

    async def post_events(
        self, url: str, payload: Mapping[str, Any], *, plain: bool = False
    ) -> AsyncGenerator[list[SSEEvent], None]:
        await self._google.ready()
        return await super().post_events(url, payload, plain=plain)


class VertexSpec(ProviderSpec):
    """The chain-file keys both Vertex types add to their vendor's: ``project`` and
    ``location`` (``regions:`` expands into one provider per location); the token is
    ``api_key: ${VAR}``, else ``GOOGLE_OAUTH_ACCESS_TOKEN`` or application default
    credentials."""

    key_env = TOKEN_ENV
    region_field = "location"
    project: Name | None = None
    location: Name | None = None

    def where_kwargs(self) -> dict[str, Any]:
        """``project`` and ``location`` as the file set them."""
        return given(project=self.project, location=self.location)
