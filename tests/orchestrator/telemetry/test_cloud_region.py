"""``cloud.region`` on attempt spans: the region or location a provider runs in, when it
has one (Vertex AI's location, Azure OpenAI's resource region), over real loopback HTTP."""

from __future__ import annotations

from orchestrator import FallbackAgent
from providers import AzureOpenAI, Fault, OpenAIChat, SimulatedServer, VertexAnthropic
from tests.orchestrator.telemetry.conftest import Otel


async def test_cloud_region_on_the_attempt_spans_of_regional_providers(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("vertex_anthropic", [Fault.model_not_found()])
        sim.script("azure", [Fault.model_not_found()])
        vertex = VertexAnthropic(
            "claude-sonnet-4-6",
            project="sim-project",
            location="europe-west1",
            base_url=sim.vertex_url,
            access_token=sim.vertex_token,
        )
        azure = AzureOpenAI(
            deployment="gpt-4o-mini", endpoint=sim.azure_url, region="swedencentral", api_key="k"
        )
        plain = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key="k")
        result = await FallbackAgent([vertex, azure, plain]).run("hi")
    assert result.handled_by == plain.name
    spans = {str(s.attributes["failover.provider"]): s.attributes for s in otel.attempt_spans()}
    assert spans[vertex.name]["cloud.region"] == "europe-west1"
    assert spans[vertex.name]["gen_ai.provider.name"] == "gcp.vertex_ai"
    assert spans[azure.name]["cloud.region"] == "swedencentral"
    assert "cloud.region" not in spans[plain.name]
    assert sim.vertex_token not in repr([dict(s.attributes or {}) for s in otel.spans()])


def test_azure_knows_its_region_from_a_resource_named_after_it() -> None:
    east = AzureOpenAI(deployment="d", resource="contoso-eastus2", api_key="k")
    told = AzureOpenAI(deployment="d", resource="contoso-prod", region="westeurope", api_key="k")
    assert (east.region, told.region) == ("eastus2", "westeurope")
    assert AzureOpenAI(deployment="d", resource="contoso-prod", api_key="k").region is None
