"""Provider types come from the ``failover.providers`` entry-point group: a third-party
distribution adds ``type: mycorp`` to chain files without touching this project."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_config, registry

BUILT_IN = (
    "openai, anthropic, gemini, azure_openai, bedrock, vertex_anthropic, vertex_gemini, http, "
    "claude_code, codex, gemini_cli, cli, function"
)

# A provider package written against orchestrator's public API only.
MYCORP = """
from typing import Literal

from pydantic import field_validator

from orchestrator import Request, Response
from orchestrator.config.spec import BuildContext, Name, PositiveFloat, ProviderSpec, value_problem


class MyCorp:
    def __init__(self, model: str, *, name: str, greeting: str, timeout: float) -> None:
        self.name, self.model, self.greeting, self.timeout = name, model, greeting, timeout

    async def complete(self, request: Request) -> Response:
        return Response(text=f"{self.greeting} from {self.model}: {request.prompt}")


class MyCorpSpec(ProviderSpec):
    key_env = "MYCORP_TOKEN"
    type: Literal["mycorp"]
    model: Name
    greeting: str = "hello"
    timeout: PositiveFloat = 30.0

    @field_validator("greeting")
    @classmethod
    def _polite(cls, value: str) -> str:
        if not value.strip():
            raise value_problem("is blank; say something")
        return value

    def build(self, ctx: BuildContext) -> MyCorp:
        return MyCorp(self.model, name=ctx.name, greeting=self.greeting, timeout=self.timeout)


NOT_A_SPEC = 42
"""


def install(site: Path, package: str, source: str, entry_points: str) -> None:
    """Write ``package`` and a ``.dist-info`` declaring ``entry_points`` under ``site``."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(source)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(f"[failover.providers]\n{entry_points}")


@pytest.fixture
def mycorp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A distribution ``mycorp-provider`` on sys.path, registering ``mycorp`` (and two
    broken entries); the registry forgets it afterwards."""
    package = f"mycorp_provider_{uuid.uuid4().hex[:8]}"
    site = tmp_path / "site"
    install(
        site,
        package,
        MYCORP,
        f"mycorp = {package}:MyCorpSpec\n"
        f"notaspec = {package}:NOT_A_SPEC\n"
        "missing = mycorp_not_installed_anywhere:Spec\n",
    )
    monkeypatch.syspath_prepend(str(site))
    registry.clear()
    yield package
    registry.clear()
    sys.modules.pop(package, None)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "chain.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    return str(info.value)


async def test_a_third_party_type_is_validated_built_and_called(
    tmp_path: Path, mycorp: str
) -> None:
    path = write(
        tmp_path,
        """
        providers:
          mine: {type: mycorp, model: m-1, greeting: hi, max_retries: 0}
        agents:
          main: {providers: [mine]}
        """,
    )
    config = load_config(path, environ={})
    provider = config.providers["mine"]
    assert type(provider).__module__ == mycorp
    assert (provider.name, provider.timeout) == ("mine", 30.0)
    assert config.provider_types == {"mine": "mycorp"}
    result = await config.agent("main").run("ping")
    assert result.text == "hi from m-1: ping"
    assert result.handled_by == "mine"


def test_a_third_party_spec_locates_its_errors(tmp_path: Path, mycorp: str) -> None:
    path = write(
        tmp_path,
        """
        providers:
          mine:
            type: mycorp
            model: m
            greeting: "  "
            timeout: 0
            colour: blue
        """,
    )
    assert error_of(path).splitlines() == [
        f"{path}:5: providers.mine.greeting: '  ' is blank; say something",
        f"{path}:6: providers.mine.timeout: 0 is not allowed; use a number > 0",
        f"{path}:7: providers.mine.colour: unknown key; allowed here: budget, greeting, "
        "jitter, limits, max_delay, max_retries, model, retry_delay, retry_strategy, timeout, type",
    ]


def test_an_unknown_type_lists_every_registered_type(tmp_path: Path, mycorp: str) -> None:
    path = write(tmp_path, "providers:\n  x: {type: mycrop, model: m}\n")
    assert error_of(path) == (
        f"{path}:2: providers.x.type: 'mycrop' is not one of {BUILT_IN}, mycorp, missing, notaspec"
    )


def test_a_broken_entry_point_is_reported_at_the_type(tmp_path: Path, mycorp: str) -> None:
    path = write(tmp_path, "providers:\n  a: {type: notaspec}\n  b: {type: missing}\n")
    assert error_of(path).splitlines() == [
        f"{path}:2: providers.a.type: type 'notaspec' cannot be loaded: entry point "
        f"'{mycorp}:NOT_A_SPEC' names a int, not a ProviderSpec subclass",
        f"{path}:3: providers.b.type: type 'missing' needs a module that cannot be imported "
        "here: No module named 'mycorp_not_installed_anywhere'",
    ]


def test_a_literal_key_suggests_the_variable_the_type_names(tmp_path: Path, mycorp: str) -> None:
    path = write(tmp_path, "providers:\n  x: {type: mycorp, model: m, api_key: abc}\n")
    assert error_of(path).endswith("keep it in the environment and write api_key: ${MYCORP_TOKEN}")


def test_without_the_distribution_the_type_is_unknown(tmp_path: Path) -> None:
    path = write(tmp_path, "providers:\n  x: {type: mycorp, model: m}\n")
    assert error_of(path) == f"{path}:2: providers.x.type: 'mycorp' is not one of {BUILT_IN}"


def test_loading_a_chain_file_imports_only_the_types_it_uses(tmp_path: Path) -> None:
    (tmp_path / "fnhooks.py").write_text("def answer(request):\n    return 'ok'\n")
    path = write(tmp_path, "providers:\n  fn: {type: function, path: 'fnhooks:answer'}\n")
    code = (
        "import sys; from orchestrator.config import load_config; "
        f"load_config({str(path)!r}, environ={{}}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'providers'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "[]"
