"""AzureOpenAI over loopback HTTP: its URLs, its auth (api-key, Entra ID tokens), its
errors in the taxonomy, its prices, and a two-region chain under load."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from orchestrator import FallbackAgent
from orchestrator import errors as E
from orchestrator.types import Request
from providers import AzureOpenAI, Fault, SimulatedServer
from tests.providers.conftest import after_cli_help, kept_then_refreshed
from tests.providers.http.test_http_matrix import call

KEY = "azure-key-0123456789abcdef"


def azure(sim: SimulatedServer, **kw: Any) -> AzureOpenAI:
    kw.setdefault("api_key", KEY)
    kw.setdefault("deployment", "gpt-4o-mini")
    return AzureOpenAI(endpoint=sim.azure_url, **kw)


# -- URLs, headers and names ---------------------------------------------------------


async def test_deployment_style_url_api_version_and_api_key_header(sim: SimulatedServer) -> None:
    provider = azure(sim, deployment="chat-prod", api_version="2024-10-21")
    response = await provider.complete(Request("What is the capital of France?"))
    assert response.text.startswith("sim-azure:")
    (sent,) = sim.requests("azure")
    assert sent["path"] == "/azure/openai/deployments/chat-prod/chat/completions"
    assert sent["query"] == {"api-version": "2024-10-21"}
    assert sent["headers"]["api-key"] == KEY
    assert "authorization" not in sent["headers"]
    assert sent["body"]["model"] == "chat-prod"


@pytest.mark.parametrize("version", [None, "v1"])
async def test_v1_style_url_sends_the_deployment_as_model(
    sim: SimulatedServer, version: str | None
) -> None:
    provider = azure(sim, deployment="chat-prod", api_version=version)
    chunks = [c async for c in provider.stream(Request("hello"))]
    assert chunks[-1].text.startswith("sim-azure:")  # type: ignore[union-attr]
    (sent,) = sim.requests("azure")
    assert sent["path"] == "/azure/openai/v1/chat/completions" and sent["query"] == {}
    assert sent["body"]["model"] == "chat-prod"


def test_resource_builds_the_azure_host_and_names_differ_per_region() -> None:
    east = AzureOpenAI(deployment="gpt-4o", resource="contoso-eastus2", api_key="k")
    west = AzureOpenAI(deployment="gpt-4o", resource="contoso-swedencentral", api_key="k")
    assert east.base_url == "https://contoso-eastus2.openai.azure.com/openai/v1"
    assert (east.name, west.name) == (
        "azure:gpt-4o@contoso-eastus2",
        "azure:gpt-4o@contoso-swedencentral",
    )
    assert east.gen_ai_provider_name == "azure.ai.openai"


def test_endpoint_and_key_from_the_environment(
    sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", sim.azure_url + "/")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "env-key-0123456789")
    provider = AzureOpenAI(deployment="d1", api_version="2025-04-01-preview")
    asyncio.run(provider.complete(Request("hi")))
    (sent,) = sim.requests("azure")
    assert sent["headers"]["api-key"] == "env-key-0123456789"
    assert sent["query"] == {"api-version": "2025-04-01-preview"}


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"resource": "evil.com/x#"}, "resource="),
        ({"resource": "a", "endpoint": "https://a.openai.azure.com"}, "not both"),
        ({"resource": "a", "deployment": "../../admin"}, "deployment="),
        ({"resource": "a", "api_version": "2024&x=1"}, "api_version="),
        ({}, "AZURE_OPENAI_ENDPOINT"),
        ({"resource": "a", "credential": object()}, "credential"),
    ],
)
def test_bad_coordinates_are_refused_at_construction(
    kw: dict[str, Any], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    kw.setdefault("deployment", "d")
    with pytest.raises((ValueError, TypeError), match=says):
        AzureOpenAI(**kw)


def test_the_simulator_refuses_no_key_and_a_missing_api_version(sim: SimulatedServer) -> None:
    import httpx

    url = f"{sim.azure_url}/openai/deployments/d/chat/completions"
    body = {"messages": [{"role": "user", "content": "hi"}]}
    no_key = httpx.post(url + "?api-version=2024-10-21", json=body)
    no_version = httpx.post(url, json=body, headers={"api-key": KEY})
    assert (no_key.status_code, no_key.json()["error"]["code"]) == (401, "401")
    assert (no_version.status_code, no_version.json()["error"]["message"]) == (
        404,
        "Resource not found",
    )


# -- errors --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_a_blocked_prompt_is_a_guardrail_400(sim: SimulatedServer, mode: str) -> None:
    sim.script("azure", [Fault.content_filter(prompt_blocked=True)])
    provider = azure(sim, api_version="2024-10-21")
    with pytest.raises(E.GuardrailTriggered) as info:
        await call(provider, mode, Request("What is the capital of France?"))
    assert info.value.status == 400 and "content management policy" in str(info.value)
    assert "capital of France" not in str(info.value)


async def test_a_guardrail_never_escalates_unless_asked(sim: SimulatedServer) -> None:
    async with SimulatedServer() as other:
        east, sweden = azure(sim), azure(other)
        sim.set_default("azure", Fault.content_filter())
        with pytest.raises(E.GuardrailTriggered):
            await FallbackAgent([east, sweden]).run("hi")
        assert other.count("azure") == 0
        result = await FallbackAgent([east, sweden], escalate_on_guardrail=True).run("hi")
        assert result.handled_by == sweden.name and other.count("azure") == 1


@pytest.mark.parametrize(
    ("headers", "message", "wait"),
    [
        ({"retry-after-ms": "1500", "retry-after": "2"}, "Please retry after 2 seconds.", 1.5),
        ({"retry-after": "3"}, "Please retry after 2 seconds.", 3.0),
        ({}, "Please retry after 6 seconds.", 6.0),
    ],
)
def test_429_waits_for_retry_after_ms_then_retry_after_then_the_message(
    headers: dict[str, str], message: str, wait: float
) -> None:
    body = {"error": {"code": "429", "message": message}}
    err = AzureOpenAI(deployment="d", resource="r", api_key=KEY).map_error(429, headers, body)
    assert isinstance(err, E.RateLimited) and err.retry_after == wait


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (429, "insufficient_quota", E.QuotaExhausted),  # quota, not a rate: fall over at once
        (404, "DeploymentNotFound", E.ModelNotFound),
        (500, "DeploymentNotFound", E.ModelNotFound),  # an in-stream error has no status
        (400, "OperationNotSupported", E.UnusableError),  # an embeddings deployment
        (400, "content_filter", E.GuardrailTriggered),
    ],
)
def test_azure_error_codes(status: int, code: str, expected: type[E.ProviderError]) -> None:
    body = {"error": {"code": code, "message": f"{code} {KEY}"}}
    err = AzureOpenAI(deployment="d", resource="r", api_key=KEY).map_error(status, {}, body)
    assert type(err) is expected and KEY not in str(err)


async def test_deployment_not_found_falls_over_at_once(sim: SimulatedServer) -> None:
    async with SimulatedServer() as other:
        sim.set_default("azure", Fault.model_not_found())
        result = await FallbackAgent([azure(sim), azure(other)], max_retries=3).run("hi")
        assert isinstance(result.attempts[0].error, E.ModelNotFound)
        assert sim.count("azure") == 1 and other.count("azure") == 1


# -- prices from the catalogue --------------------------------------------------------


def test_prices_from_the_catalogue_for_openai_models_on_azure() -> None:
    named = AzureOpenAI(deployment="gpt-4o", resource="contoso", api_key="k")
    aliased = AzureOpenAI(deployment="prod-chat", model="gpt-4o", resource="contoso", api_key="k")
    unknown = AzureOpenAI(deployment="prod-chat", resource="contoso", api_key="k")
    assert named.price is not None and named.context_window == 128_000
    assert aliased.price == named.price and aliased.context_window == 128_000
    assert (unknown.price, unknown.context_window) == (None, None)


# -- Microsoft Entra ID tokens ---------------------------------------------------------


class FakeToken:
    def __init__(self, token: str, expires_on: float) -> None:
        self.token, self.expires_on = token, expires_on


class FakeCredential:
    """A sync azure-identity credential: counts its fetches and the threads they ran on."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.calls: list[tuple[str, ...]] = []
        self.threads: set[int] = set()

    def get_token(self, *scopes: str) -> FakeToken:
        self.calls.append(scopes)
        self.threads.add(threading.get_ident())
        return FakeToken(f"entra-token-{len(self.calls)}-abcdef", self.now[0] + 3600)


async def test_entra_tokens_fetched_once_off_the_loop_and_refreshed_before_expiry(
    sim: SimulatedServer,
) -> None:
    now = [1_000_000.0]
    credential = FakeCredential(now)
    provider = azure(sim, api_key=None, credential=credential)
    assert provider._token is not None
    provider._token._clock = lambda: now[0]  # fake wall time
    await asyncio.gather(*(provider.complete(Request("hi")) for _ in range(100)))
    assert credential.calls == [("https://cognitiveservices.azure.com/.default",)]
    assert threading.get_ident() not in credential.threads  # fetched on a worker thread
    sent = {r["headers"]["authorization"] for r in sim.requests("azure")}
    assert sent == {"Bearer entra-token-1-abcdef"}
    assert all("api-key" not in r["headers"] for r in sim.requests("azure"))
    await kept_then_refreshed(provider, now, 300, lambda: len(credential.calls))  # 5 minutes
    assert sim.requests("azure")[-1]["headers"]["authorization"] == "Bearer entra-token-2-abcdef"


async def test_a_failing_credential_is_authentication_failed_without_its_text(
    sim: SimulatedServer,
) -> None:
    class Broken:
        def get_token(self, *scopes: str) -> FakeToken:
            raise RuntimeError("secret-in-the-credential-error client_secret=abc123")

    agent_children = [azure(sim, api_key=None, credential=Broken(), name="entra"), azure(sim)]
    result = await FallbackAgent(agent_children).run("hi")
    err = result.attempts[0].error
    assert isinstance(err, E.AuthenticationFailed) and "RuntimeError" in str(err)
    assert "abc123" not in str(err) and "abc123" not in repr(err)
    assert result.handled_by == agent_children[1].name


async def test_the_token_never_shows_in_an_error(sim: SimulatedServer) -> None:
    sim.script(
        "azure", [Fault.status(401, body={"error": {"message": "bad Bearer entra-token-1-abcdef"}})]
    )
    provider = azure(sim, api_key=None, credential=FakeCredential([0.0]))
    with pytest.raises(E.AuthenticationFailed) as info:
        await provider.complete(Request("hi"))
    assert "entra-token-1-abcdef" not in str(info.value) + repr(provider)


def test_an_async_credential_is_refused() -> None:
    class AsyncCredential:
        async def get_token(self, *scopes: str) -> FakeToken:
            return FakeToken("t", 0)

    with pytest.raises(TypeError, match=r"azure\.identity\.aio"):
        AzureOpenAI(deployment="d", resource="r", credential=AsyncCredential())


def test_default_credential_without_the_extra_says_which_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "azure.identity", None)  # as if not installed
    with pytest.raises(E.NotInstalled, match=r"pip install 'failover-orchestrator\[azure\]'"):
        AzureOpenAI(deployment="d", resource="r", credential="default")


# -- azure.identity only when a credential is used ---------------------------------------


@pytest.mark.parametrize(
    ("extra", "imported"),
    [
        ("", False),
        ("providers.AzureOpenAI(deployment='d', resource='r', credential='default')", True),
    ],
)
def test_import_providers_and_failover_help_never_import_azure_identity(
    tmp_path: Path, extra: str, imported: bool
) -> None:
    fake = tmp_path / "azure" / "identity"
    fake.mkdir(parents=True)
    (tmp_path / "azure" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text(
        "class DefaultAzureCredential:\n    def get_token(self, *s):\n        raise RuntimeError\n"
    )
    probe = '"azure.identity" in sys.modules'
    shown = after_cli_help("providers.AzureOpenAI", probe, after=extra, path=str(tmp_path))
    assert shown == str(imported)


# -- two regions, 100 calls in flight --------------------------------------------------


async def test_eastus2_to_swedencentral_falls_over_on_429_and_503_with_100_in_flight() -> None:
    async with SimulatedServer() as east_sim, SimulatedServer() as sweden_sim:
        faults = [Fault.rate_limited(0.5) if i % 2 else Fault.status(503) for i in range(100)]
        east_sim.script("azure", faults)
        east = azure(east_sim, name="eastus2", api_version="2025-04-01-preview")
        sweden = azure(sweden_sim, name="swedencentral", api_version="2025-04-01-preview")
        agent = FallbackAgent([east, sweden], max_retries=0)
        results = await asyncio.gather(*(agent.run(f"question {i}") for i in range(100)))
        assert {r.handled_by for r in results} == {"swedencentral"}
        kinds = {type(r.attempts[0].error) for r in results}
        assert kinds == {E.RateLimited, E.ServerError}
        assert east_sim.count("azure") == 100 and sweden_sim.count("azure") == 100


# -- the chain file's type: azure_openai ---------------------------------------------------


def chain(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "chain.yaml"
    path.write_text(f"providers:\n  east:\n{entry}agents:\n  gpt:\n    providers: [east]\n")
    return path


def test_chain_file_azure_openai(sim: SimulatedServer, tmp_path: Path) -> None:
    from orchestrator.config import load_config

    entry = (
        "    type: azure_openai\n"
        "    endpoint: ${SIM}\n"
        "    deployment: prod-chat\n"
        "    model: gpt-4o\n"
        "    api_version: 2025-04-01-preview\n"
        "    api_key: ${AZURE_OPENAI_API_KEY}\n"
    )
    env = {"SIM": sim.azure_url, "AZURE_OPENAI_API_KEY": KEY}
    config = load_config(chain(tmp_path, entry), environ=env)
    result = asyncio.run(config.agents["gpt"].run("hi"))
    assert result.handled_by == "east"
    (sent,) = sim.requests("azure")
    assert sent["path"] == "/azure/openai/deployments/prod-chat/chat/completions"
    assert sent["query"] == {"api-version": "2025-04-01-preview"}
    assert sent["headers"]["api-key"] == KEY


def test_chain_file_resource_and_credential_build_the_provider(tmp_path: Path) -> None:
    from orchestrator.config import load_config

    entry = "    type: azure_openai\n    resource: contoso-eastus2\n    deployment: gpt-4o\n"
    provider = load_config(chain(tmp_path, entry), environ={}).agents["gpt"].children[0]
    assert isinstance(provider, AzureOpenAI)
    assert provider.base_url == "https://contoso-eastus2.openai.azure.com/openai/v1"
    assert provider.price is not None  # gpt-4o from the catalogue


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("    type: azure_openai\n    resource: r\n", "deployment"),
        (
            "    type: azure_openai\n    deployment: d\n    base_url: https://x.example\n",
            "not base_url",
        ),
        ("    type: azure_openai\n    deployment: d\n    endpoint: http://x.example\n", "https"),
    ],
)
def test_chain_file_azure_errors_name_line_and_field(tmp_path: Path, entry: str, says: str) -> None:
    from orchestrator.config import ConfigError, load_config

    with pytest.raises(ConfigError) as info:
        load_config(chain(tmp_path, entry), environ={})
    assert says in str(info.value) and str(info.value).startswith(f"{tmp_path / 'chain.yaml'}:")
