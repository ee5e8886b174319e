"""VertexAnthropic and VertexGemini over loopback HTTP: their URLs and bodies, Google's
tokens (refreshed off the loop, never shown), their errors in the taxonomy, their prices,
the chain-file types, and google-auth imported only when used."""

from __future__ import annotations

import asyncio
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from orchestrator import FallbackAgent
from orchestrator import errors as E
from orchestrator.config import load_config
from orchestrator.testing import capture_events
from orchestrator.types import Request
from providers import BenchmarkFault, Fault, SimulatedServer, VertexAnthropic, VertexGemini
from providers.http.errors import map_vertex_error
from providers.vertex.auth import SCOPE, GoogleToken
from tests.providers.conftest import after_cli_help, kept_then_refreshed
from tests.providers.http.test_http_matrix import call

PROJECT = "sim-project"
ROOT = "/vertex/v1/projects/sim-project/locations"


def claude(sim: SimulatedServer, **kw: Any) -> VertexAnthropic:
    kw.setdefault("access_token", sim.vertex_token)
    kw.setdefault("location", "us-east5")
    return VertexAnthropic("claude-sonnet-4-6", project=PROJECT, base_url=sim.vertex_url, **kw)


def gemini(sim: SimulatedServer, **kw: Any) -> VertexGemini:
    kw.setdefault("access_token", sim.vertex_token)
    kw.setdefault("location", "europe-west1")
    return VertexGemini("gemini-2.5-flash", project=PROJECT, base_url=sim.vertex_url, **kw)


async def whole_and_streamed(sim: SimulatedServer, provider: Any, route: str) -> list[Any]:
    """One call and one stream through ``provider``, both answered; the two requests sent."""
    assert (await provider.complete(Request("hi"))).text.startswith(f"sim-{route}:")
    chunks = [c async for c in provider.stream(Request("hello"))]
    assert chunks[-1].text.startswith(f"sim-{route}:")
    return sim.requests(route)


# -- URLs, bodies, headers and names -------------------------------------------------------


async def test_claude_posts_raw_predict_with_the_vertex_version_and_no_model(
    sim: SimulatedServer,
) -> None:
    whole, streamed = await whole_and_streamed(sim, claude(sim), "vertex_anthropic")
    model = f"{ROOT}/us-east5/publishers/anthropic/models/claude-sonnet-4-6"
    assert (whole["path"], streamed["path"]) == (f"{model}:rawPredict", f"{model}:streamRawPredict")
    for sent in (whole, streamed):
        assert sent["body"]["anthropic_version"] == "vertex-2023-10-16"
        assert "model" not in sent["body"]
        assert sent["headers"]["authorization"] == f"Bearer {sim.vertex_token}"
        assert "x-api-key" not in sent["headers"] and "anthropic-version" not in sent["headers"]
    assert streamed["body"]["stream"] is True


async def test_gemini_posts_generate_content_and_streams_sse(sim: SimulatedServer) -> None:
    whole, streamed = await whole_and_streamed(sim, gemini(sim), "vertex_gemini")
    model = f"{ROOT}/europe-west1/publishers/google/models/gemini-2.5-flash"
    assert whole["path"] == f"{model}:generateContent"
    assert (streamed["path"], streamed["query"]) == (
        f"{model}:streamGenerateContent",
        {"alt": "sse"},
    )
    assert "x-goog-api-key" not in whole["headers"]


def test_google_hosts_per_location_names_and_telemetry_facts() -> None:
    east = VertexAnthropic("claude-sonnet-4-6", project="p1", location="us-east5")
    world = VertexGemini("gemini-2.5-flash", project="p1", location="global")
    eu = VertexGemini("gemini-2.5-flash", project="p1", location="eu")
    assert east.base_url == "https://us-east5-aiplatform.googleapis.com/v1"
    assert world.base_url == "https://aiplatform.googleapis.com/v1"
    assert eu.base_url == "https://aiplatform.eu.rep.googleapis.com/v1"
    assert (east.name, world.name) == (
        "vertex:claude-sonnet-4-6@us-east5",
        "vertex:gemini-2.5-flash@global",
    )
    assert east.gen_ai_provider_name == world.gen_ai_provider_name == "gcp.vertex_ai"
    assert (east.region, world.region) == ("us-east5", "global")
    assert east.accepts_prefill is False  # Claude 4.6 refuses a prefill, on Vertex too


def test_project_location_and_root_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "asia-southeast1")
    monkeypatch.setenv("VERTEX_BASE_URL", "http://127.0.0.1:9/vertex/v1")
    provider = VertexGemini("gemini-2.5-flash")
    assert (provider.project, provider.location) == ("env-proj", "asia-southeast1")
    assert provider.base_url == "http://127.0.0.1:9/vertex/v1"
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    with pytest.raises(ValueError, match="GOOGLE_CLOUD_PROJECT or ANTHROPIC_VERTEX_PROJECT_ID"):
        VertexAnthropic("claude-sonnet-4-6")


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"location": "us-east5/../x"}, "location"),
        ({"location": "US EAST"}, "location"),
        ({"project": "a/b"}, "project"),
        ({"access_token": "t", "api_key": "k"}, "not both"),
    ],
)
def test_bad_coordinates_are_refused_at_construction(kw: dict[str, Any], says: str) -> None:
    kw = {"project": "p1", "location": "us-east5", **kw}
    with pytest.raises(ValueError, match=says):
        VertexAnthropic("claude-sonnet-4-6", **kw)


def test_the_keywords_both_vertex_types_take_are_written_once() -> None:
    """project, location, credentials, access_token and base_url are VertexPlatform's
    __init__'s (cooperative: each type's own keywords first, its vendor's last), and the
    unknown-keyword check still reads them through the chain."""
    import inspect

    from orchestrator.keywords import accepted_keywords
    from providers.vertex.platform import VertexPlatform

    shared = {"project", "location", "credentials", "access_token", "base_url"}
    assert shared <= set(inspect.signature(VertexPlatform.__dict__["__init__"]).parameters)
    for cls in (VertexAnthropic, VertexGemini):
        assert not shared & set(inspect.signature(cls.__init__).parameters), cls.__name__
        assert shared | {"timeout", "api_key", "name"} <= accepted_keywords(cls)
    assert {"max_tokens", "anthropic_version"} <= accepted_keywords(VertexAnthropic)
    assert not {"max_tokens", "anthropic_version"} & accepted_keywords(VertexGemini)
    with pytest.raises(TypeError, match=r"'projetc' \(did you mean 'project'\?\); it takes: "):
        VertexGemini("gemini-2.5-flash", projetc="p1")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"'anthropic_versoin' \(did you mean 'anthropic_version'"):
        VertexAnthropic("claude-sonnet-4-6", anthropic_versoin="x")  # type: ignore[call-arg]
    built = VertexGemini("models/gemini-2.5-flash", project="p1", location="us-central1")
    assert built.model == "gemini-2.5-flash" and built.name == "vertex:gemini-2.5-flash@us-central1"
    assert built._url.endswith("/publishers/google/models/gemini-2.5-flash:generateContent")


def test_prices_from_the_catalogue_on_google_hosts_only(sim: SimulatedServer) -> None:
    on_google = VertexAnthropic("claude-sonnet-4-5@20250929", project="p1", location="us-east5")
    assert on_google.price == (3.0, 15.0) and on_google.context_window == 200_000
    assert VertexGemini("gemini-2.5-flash", project="p1", location="us-central1").price == (
        0.3,
        2.5,
    )
    assert claude(sim).price is None  # the simulator is not Google: catalogue=True to price it
    assert claude(sim, catalogue=True).price == (3.0, 15.0)


# -- Google's tokens ----------------------------------------------------------------------


class FakeCredentials:
    """google-auth credentials as a test double: ``refresh`` mints a new token (a real
    ``google.auth.transport.requests.Request`` is passed, never used)."""

    def __init__(self, now: list[float], fail: bool = False) -> None:
        self.now, self.fail = now, fail
        self.token: str | None = None
        self.expiry: datetime | None = None
        self.threads: set[int] = set()
        self.refreshes = 0

    def refresh(self, request: Any) -> None:
        self.threads.add(threading.get_ident())
        if self.fail:
            raise RuntimeError("refresh failed: private_key=-----BEGIN PRIVATE KEY----- abc123")
        self.refreshes += 1
        self.token = f"ya29.token-{self.refreshes}-abcdef"
        naive_utc = datetime.fromtimestamp(self.now[0], tz=UTC).replace(tzinfo=None)
        self.expiry = naive_utc + timedelta(hours=1)  # google-auth's naive UTC expiry


async def test_credentials_refreshed_once_off_the_loop_and_again_before_expiry(
    sim: SimulatedServer,
) -> None:
    now = [1_000_000.0]
    credentials = FakeCredentials(now)
    sim_token = sim.vertex_token
    sim.vertex_token = "ya29.token-1-abcdef"
    try:
        provider = claude(sim, access_token=None, credentials=credentials)
        provider._google._bearer._clock = lambda: now[0]  # fake wall time
        await asyncio.gather(*(provider.complete(Request("hi")) for _ in range(100)))
        assert credentials.refreshes == 1
        assert threading.get_ident() not in credentials.threads  # on a worker thread
        await kept_then_refreshed(
            provider,
            now,
            300,  # 5 minutes
            lambda: credentials.refreshes,
            lambda: setattr(sim, "vertex_token", "ya29.token-2-abcdef"),
        )
    finally:
        sim.vertex_token = sim_token
    sent = sim.requests("vertex_anthropic")[-1]["headers"]["authorization"]
    assert sent == "Bearer ya29.token-2-abcdef"


async def test_a_failing_refresh_falls_over_without_its_text(sim: SimulatedServer) -> None:
    broken = claude(sim, access_token=None, credentials=FakeCredentials([0.0], fail=True))
    result = await FallbackAgent([broken, gemini(sim)]).run("hi")
    err = result.attempts[0].error
    assert isinstance(err, E.AuthenticationFailed) and "RuntimeError" in str(err)
    for text in (str(err), repr(err), str(err.__cause__), repr(err.__cause__)):
        assert "abc123" not in text and "PRIVATE KEY" not in text
    assert result.handled_by == gemini(sim).name


@pytest.mark.parametrize("make", [claude, gemini])
async def test_a_wrong_token_is_401_and_the_token_never_shows(
    sim: SimulatedServer, make: Any
) -> None:
    token = "ya29.wrong-token-0123456789"
    provider = make(sim, access_token=token)
    with pytest.raises(E.AuthenticationFailed) as info:
        await provider.complete(Request("hi"))
    err = info.value
    assert err.status == 401 and sim.count() == 0  # refused before any fault: not counted
    shown = [str(err), repr(err), repr(err.__cause__), repr(provider), str(err.__context__)]
    assert all(token not in text for text in shown)


async def test_no_token_in_the_events_of_a_failed_run(sim: SimulatedServer) -> None:
    body = {"error": {"code": 403, "message": f"bad {sim.vertex_token}", "status": "X"}}
    sim.script("vertex_anthropic", [Fault.status(403, body=body), Fault.status(503)])
    with capture_events() as events, pytest.raises(E.FallbackError) as info:
        await FallbackAgent([claude(sim), claude(sim, location="asia-east1")], max_retries=0).run(
            "hi"
        )
    assert events and sim.vertex_token not in repr(events) + repr(info.value)
    assert sim.vertex_token not in str(info.value)


async def test_an_echoed_token_is_masked_in_the_error(sim: SimulatedServer) -> None:
    body = {"error": {"code": 403, "message": f"token {sim.vertex_token} denied", "status": "X"}}
    sim.script("vertex_gemini", [Fault.status(403, body=body)])
    with pytest.raises(E.AuthenticationFailed) as info:
        await gemini(sim).complete(Request("hi"))
    assert sim.vertex_token not in str(info.value)


async def test_the_environment_token_is_read_at_call_time(
    sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = gemini(sim, access_token=None)
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", sim.vertex_token)
    assert (await provider.complete(Request("hi"))).text


async def test_google_token_shares_one_refresh_among_concurrent_callers() -> None:
    now = [5_000.0]
    credentials = FakeCredentials(now)
    token = GoogleToken(access_token=None, credentials=credentials, provider="v")
    token._bearer._clock = lambda: now[0]
    await asyncio.gather(*(token.ready() for _ in range(50)))
    assert credentials.refreshes == 1 and token.current().reveal() == "ya29.token-1-abcdef"


async def test_default_credentials_without_the_extra_say_which_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN", raising=False)
    monkeypatch.setitem(sys.modules, "google.auth", None)  # as if not installed
    token = GoogleToken(access_token=None, credentials=None, provider="v")
    with pytest.raises(E.NotInstalled, match=r"pip install 'failover-orchestrator\[gcp\]'"):
        await token.ready()


async def test_default_credentials_are_google_auths_with_the_cloud_platform_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import google.auth

    asked: list[Any] = []
    credentials = FakeCredentials([0.0])

    def default(scopes: Any = None) -> tuple[Any, str]:
        asked.append(scopes)
        return credentials, "adc-project"

    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN", raising=False)
    monkeypatch.setattr(google.auth, "default", default)
    token = GoogleToken(access_token=None, credentials=None, provider="v")
    await token.ready()
    assert asked == [[SCOPE]] and token.current().reveal() == "ya29.token-1-abcdef"


def test_import_providers_and_failover_help_never_import_google_auth() -> None:
    before = """
providers.VertexAnthropic("claude-sonnet-4-6", project="p1", location="us-east5")
providers.VertexGemini("gemini-2.5-flash", project="p1", location="us-east5")
"""
    probe = 'sorted(m for m in sys.modules if m.startswith("google.auth") or m == "requests")'
    assert after_cli_help(before, probe) == "[]"


# -- errors ---------------------------------------------------------------------------------


GOOGLE_ERRORS = [
    (429, "RESOURCE_EXHAUSTED", "Quota exceeded for ... per base model", E.RateLimited),
    (403, "PERMISSION_DENIED", "Permission denied on resource", E.AuthenticationFailed),
    (404, "NOT_FOUND", "Publisher Model `projects/p/...` not found.", E.ModelNotFound),
    (400, "FAILED_PRECONDITION", "Model claude-x is not available in location x", E.ModelNotFound),
    (400, "INVALID_ARGUMENT", "Gemini 9 is not supported in region europe-north9", E.ModelNotFound),
    (400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name", E.InvalidRequest),
]


@pytest.mark.parametrize("publisher", ["anthropic", "google"])
@pytest.mark.parametrize(("status", "grpc", "message", "expected"), GOOGLE_ERRORS)
def test_googles_errors_mean_the_same_for_both_publishers(
    publisher: str, status: int, grpc: str, message: str, expected: type[E.ProviderError]
) -> None:
    body = {"error": {"code": status, "message": message, "status": grpc}}
    error = map_vertex_error(status, {}, body, publisher=publisher, provider="v")
    assert type(error) is expected


@pytest.mark.parametrize(
    ("status", "etype", "message", "expected"),
    [
        (529, "overloaded_error", "Overloaded", E.Overloaded),
        (400, "invalid_request_error", "prompt is too long", E.ContextWindowExceeded),
    ],
)
def test_claudes_own_errors_pass_through_as_anthropics(
    status: int, etype: str, message: str, expected: type[E.ProviderError]
) -> None:
    body = {"type": "error", "error": {"type": etype, "message": message}}
    error = map_vertex_error(status, {}, body, publisher="anthropic", provider="v")
    assert type(error) is expected


async def test_a_model_missing_in_one_location_falls_over_at_once(sim: SimulatedServer) -> None:
    sim.script("vertex_anthropic", [Fault.model_not_found()])
    first, second = claude(sim, location="us-east5"), claude(sim, location="europe-west1")
    result = await FallbackAgent([first, second], max_retries=3).run("hi")
    assert result.handled_by == second.name and sim.count("vertex_anthropic") == 2
    assert isinstance(result.attempts[0].error, E.ModelNotFound)


# -- the simulator's other faults, in each Vertex route's shape ----------------------------


@pytest.mark.parametrize("make", [claude, gemini], ids=["vertex_anthropic", "vertex_gemini"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize(
    ("fault", "kw", "expected"),
    [
        (lambda: Fault.oversized(200_000), {"max_response_bytes": 100_000}, E.ResponseTooLarge),
        (
            lambda: Fault.oversized(200_000, gzip=True),
            {"max_response_bytes": 100_000},
            E.ResponseTooLarge,
        ),
        (lambda: Fault.endless(0.01), {"timeout": 0.3}, E.ProviderTimeout),
        (BenchmarkFault.reset, {}, E.ConnectionFailed),
        (lambda: Fault.cut_stream(how="abort"), {}, E.ConnectionFailed),
    ],
    ids=["oversized", "gzip_bomb", "endless", "reset", "cut"],
)
async def test_hostile_faults_are_classified(
    sim: SimulatedServer, make: Any, mode: str, fault: Any, kw: dict[str, Any], expected: Any
) -> None:
    provider = make(sim, **kw)
    route = "vertex_anthropic" if make is claude else "vertex_gemini"
    sim.script(route, [fault()])
    with pytest.raises(E.ProviderError) as info:
        await call(provider, mode, Request("hi"))
    wanted = (
        E.StreamInterrupted if mode == "stream" and expected is E.ConnectionFailed else expected
    )
    if "reset" in repr(fault) or fault is BenchmarkFault.reset:
        wanted = E.ConnectionFailed  # before any header: nothing had started
    assert type(info.value) is wanted, repr(info.value)
    assert sim.count(route) == 1


@pytest.mark.parametrize("make", [claude, gemini], ids=["vertex_anthropic", "vertex_gemini"])
async def test_unterminated_and_stalled_streams(sim: SimulatedServer, make: Any) -> None:
    route = "vertex_anthropic" if make is claude else "vertex_gemini"
    sim.script(route, [BenchmarkFault.unterminated(text="whole answer"), Fault.stall(after=1)])
    if make is claude:  # all but message_stop, after the stop reason: a success
        chunks = [c async for c in make(sim).stream(Request("hi"))]
        assert chunks[-1].text == "whole answer"
    else:  # Gemini's last chunk is its finishReason, as for GeminiGenerate: cut
        with pytest.raises(E.StreamInterrupted):
            async for _ in make(sim).stream(Request("hi")):
                pass
    with pytest.raises(E.ProviderTimeout):
        async for _ in make(sim, timeout=0.3).stream(Request("hi")):
            pass


# -- chain files ----------------------------------------------------------------------------


def test_chain_file_vertex_types(
    sim: SimulatedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", sim.vertex_token)  # claude's, at call time
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n"
        "  claude: {type: vertex_anthropic, model: claude-sonnet-4-6, project: p1,\n"
        "           location: us-east5, base_url: '${VERTEX_BASE_URL}'}\n"
        "  gemini: {type: vertex_gemini, model: gemini-2.5-flash, project: p1, location: global,\n"
        "           base_url: '${VERTEX_BASE_URL}', api_key: '${GOOGLE_OAUTH_ACCESS_TOKEN}'}\n"
        "agents:\n  main: {providers: [claude, gemini]}\n"
    )
    config = load_config(path, environ=sim.environment())
    claude_p, gemini_p = config.providers["claude"], config.providers["gemini"]
    assert isinstance(claude_p, VertexAnthropic) and isinstance(gemini_p, VertexGemini)
    assert (claude_p.location, gemini_p.location, gemini_p.project) == ("us-east5", "global", "p1")
    assert config.provider_types == {"claude": "vertex_anthropic", "gemini": "vertex_gemini"}
    sim.script("vertex_anthropic", [Fault.model_not_found()])
    result = config.agent().run_sync("hi")
    assert result.handled_by == "gemini"
