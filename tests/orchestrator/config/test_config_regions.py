"""The ``regions:`` shorthand of chain files: one entry, one provider per region, in order;
bad lists are located errors."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

import pytest

from orchestrator.config import load_config
from orchestrator.config.regions import region_field
from orchestrator.config.spec import Name, ProviderSpec
from providers.simulator import Fault, SimulatedServer
from tests.orchestrator.config.test_config_errors import error_of as config_error
from tests.orchestrator.config.test_config_errors import write as write_file


def write(tmp_path: Path, text: str) -> Path:
    return write_file(tmp_path, "chain.yaml", text)


def error_of(path: Path) -> str:
    return str(config_error(path, {"GOOGLE_OAUTH_ACCESS_TOKEN": "t"}))


CLAUDE = """
providers:
  claude:
    type: vertex_anthropic
    model: claude-sonnet-4-6
    project: my-proj
    regions: [us-east5, europe-west1, asia-southeast1]
    max_retries: 0
agents:
  main:
    providers: [claude]
"""


def test_regions_expand_into_one_provider_per_location_in_order(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CLAUDE), environ={})
    names = ["claude@us-east5", "claude@europe-west1", "claude@asia-southeast1"]
    assert list(config.providers) == names
    assert [p.location for p in config.providers.values()] == [
        "us-east5",
        "europe-west1",
        "asia-southeast1",
    ]
    assert config.providers["claude@europe-west1"].base_url == (
        "https://europe-west1-aiplatform.googleapis.com/v1"
    )
    assert [c.name for c in config.agent().children] == names
    assert set(config.provider_types.values()) == {"vertex_anthropic"}


def test_azure_regions_are_resources(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        providers:
          gpt:
            type: azure_openai
            deployment: gpt-5-4-mini
            api_version: 2025-04-01-preview
            regions: [contoso-eastus2, contoso-swedencentral]
        agents:
          main: {providers: [{ref: gpt, max_retries: 1}]}
        """,
    )
    config = load_config(path, environ={"AZURE_OPENAI_API_KEY": "k"})
    east, sweden = config.agent().children
    assert (east.name, sweden.name) == ("gpt@contoso-eastus2", "gpt@contoso-swedencentral")
    assert east.base_url.startswith("https://contoso-eastus2.openai.azure.com/")
    assert sweden.base_url.startswith("https://contoso-swedencentral.openai.azure.com/")
    assert [p.max_retries for p in config.agent().policies] == [1, 1]


@pytest.mark.parametrize(
    ("entry", "line", "says"),
    [
        ("regions: []", 6, "providers.claude.regions: is empty; give at least one location"),
        (
            "regions: [us-east5, europe-west1, us-east5]",
            6,
            "providers.claude.regions[2]: 'us-east5' is listed twice (first at regions[0])",
        ),
        (
            "location: us-east5\n    regions: [europe-west1]",
            7,
            "providers.claude.regions: give location: or regions:, not both",
        ),
        ("regions: us-east5", 6, "providers.claude.regions: expected a list of location values"),
        ("regions: [us-east5, 3]", 6, "providers.claude.regions[1]: 3 is not a location name"),
        (
            "regions: [us-east5, 'bad/place']",
            6,
            "providers.claude.regions[1]: VertexAnthropic.location='bad/place'",
        ),
    ],
)
def test_bad_regions_are_located_errors(tmp_path: Path, entry: str, line: int, says: str) -> None:
    path = write(
        tmp_path,
        "providers:\n  claude:\n    type: vertex_anthropic\n    model: claude-sonnet-4-6\n"
        f"    project: my-proj\n    {entry}\n",
    )
    error = error_of(path)
    assert f"{path}:{line}: {says}" in error, error


def test_a_type_without_a_region_field_refuses_regions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        providers:
          gpt: {type: openai, model: gpt-4o-mini, regions: [a, b]}
        """,
    )
    assert error_of(path) == (
        f"{path}:2: providers.gpt.regions: type 'openai' has no region or location field; "
        "declare one provider per endpoint instead"
    )


def test_an_expanded_name_taken_by_another_provider_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        providers:
          claude: {type: vertex_anthropic, model: m, project: p, regions: [us-east5]}
          claude@us-east5: {type: vertex_anthropic, model: m, project: p, location: us-east5}
        """,
    )
    assert "providers.claude.regions[0]: 'us-east5' names claude@us-east5, " in error_of(path)


class _RegionSpec(ProviderSpec):
    type: Literal["regional"]
    region: Name | None = None


class _DeclaredSpec(ProviderSpec):
    region_field: ClassVar[str | None] = "zone"
    type: Literal["zoned"]
    zone: Name | None = None
    region: Name | None = None


def test_the_region_field_is_declared_or_found() -> None:
    assert region_field(_RegionSpec) == "region"  # e.g. a Bedrock spec's region
    assert region_field(_DeclaredSpec) == "zone"
    assert region_field(ProviderSpec) is None


async def test_a_regional_chain_falls_over_region_by_region_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SimulatedServer() as sim:
        root = f"project: my-proj\n    base_url: {sim.vertex_url}"
        config = load_config(write(tmp_path, CLAUDE.replace("project: my-proj", root)), environ={})
        monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", sim.vertex_token)
        sim.script("vertex_anthropic", [Fault.rate_limited(None), Fault.model_not_found()])
        result = await config.agent().run("hi")
        paths = [r["path"] for r in sim.requests("vertex_anthropic")]
    assert result.handled_by == "claude@asia-southeast1"
    locations = [p.split("/locations/")[1].split("/")[0] for p in paths]
    assert locations == ["us-east5", "europe-west1", "asia-southeast1"]
