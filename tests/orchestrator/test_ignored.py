"""Settings that cannot take effect are warned of (IgnoredSetting), with the fix named."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

from orchestrator import FallbackAgent, IgnoredSetting, Request, Tool
from tests.conftest import Scripted


def test_max_hedges_with_hedging_off_is_warned_where_it_was_written() -> None:
    # hedge_after="auto" is the default (issue 17 item 19): only hedge_after=None turns it off.
    with pytest.warns(
        IgnoredSetting, match=r"max_hedges=2 has no effect with hedge_after=None"
    ) as w:
        FallbackAgent([Scripted("a", []), Scripted("b", [])], max_hedges=2, hedge_after=None)
    assert w[0].filename == __file__  # located at the caller's line, not in the library


def test_hedge_after_on_a_one_child_chain_is_warned() -> None:
    with pytest.warns(IgnoredSetting, match=r"hedge_after=0.4 has no effect: the chain has one"):
        FallbackAgent([Scripted("a", [])], hedge_after=0.4)


def test_hedge_after_with_no_provider_followed_by_a_provider_is_warned() -> None:
    inner = FallbackAgent([Scripted("x", []), Scripted("y", [])])
    with pytest.warns(IgnoredSetting, match="no provider followed by a provider"):
        FallbackAgent([Scripted("a", []), inner], hedge_after=0.4)


def test_settings_that_take_effect_are_not_warned() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSetting)
        FallbackAgent([Scripted("a", []), Scripted("b", [])], hedge_after=0.4, max_hedges=1)
        FallbackAgent([Scripted("a", [])])


def _tool(name: str, parameters: dict[str, object]) -> Tool:
    return Tool(name, parameters=parameters)


async def test_an_unknown_tool_schema_keyword_is_warned_with_the_close_keyword() -> None:
    tool = _tool("lookup_misspelt", {"type": "object", "propertes": {"q": {"type": "string"}}})
    agent = FallbackAgent([Scripted("a", ["ok"])])
    with pytest.warns(IgnoredSetting) as w:
        await agent.run(Request("hi", tools=[tool]))
    (message,) = [str(x.message) for x in w]
    assert "'propertes' (did you mean 'properties'?)" in message
    assert "lookup_misspelt" in message


async def test_nested_unknown_keywords_are_found_and_known_ones_and_names_are_not() -> None:
    schema = {
        "type": "object",
        "title": "T",
        "x-vendor": 1,
        "properties": {
            "propertes": {"type": "string", "descripton": "d"},  # a property may be so named
            "items": {"type": "array", "items": {"typ": "string"}},
        },
        "default": {"anything": 1},  # data, not a schema
    }
    with pytest.warns(IgnoredSetting) as w:
        await FallbackAgent([Scripted("a", ["ok"])]).run(
            Request("hi", tools=[_tool("nested_kw", schema)])
        )
    (message,) = [str(x.message) for x in w]
    assert "'descripton' (did you mean 'description'?)" in message
    assert "'typ' (did you mean 'type'?)" in message
    for name in ("'propertes'", "'items'", "'anything'", "x-vendor", "'title'"):
        assert name not in message


async def test_many_calls_in_flight_with_hostile_keywords_keep_no_registry() -> None:
    # Schemas from a gateway's clients are hostile: every distinct message must not stay
    # in a warnings registry, and the keyword shown is cut short.
    import orchestrator.tools as tools

    agent = FallbackAgent([Scripted("a", ["ok"] * 50)])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("default")
        # Tool schemas are checked when the Request is built: the warnings come from here.
        requests = [
            Request("hi", tools=[_tool(f"t{i}", {"type": "object", f"k{i}" + "z" * 500: 1})])
            for i in range(50)
        ]
        await asyncio.gather(*(agent.run(r) for r in requests))
    assert len(w) == 50 and all(len(str(x.message)) < 400 for x in w)
    registry = getattr(tools, "__warningregistry__", {})
    assert not [k for k in registry if isinstance(k, tuple) and "zzzz" in str(k[0])]


def test_a_chain_file_setting_that_cannot_take_effect_is_warned_at_its_line(
    tmp_path: Path,
) -> None:
    from orchestrator.config import load_config

    path = tmp_path / "chain.yaml"
    path.write_text(
        'providers:\n  fn: {type: function, path: "json:dumps"}\n'
        "agents:\n  solo:\n    providers: [fn]\n    hedge_after: 0.5\n"
        "  pair:\n    providers: [fn, fn2]\n    max_hedges: 3\n    hedge_after: null\n"
        "  ok: {providers: [fn, fn2], hedge_after: 0.5}\n"
    )
    text = path.read_text().replace(
        "providers:\n", 'providers:\n  fn2: {type: function, path: "json:loads"}\n', 1
    )
    path.write_text(text)
    with pytest.warns(IgnoredSetting) as w:
        load_config(path)
    located = sorted((x.filename, x.lineno, str(x.message)[:11]) for x in w)
    assert located == [(str(path), 5, "agents.solo"), (str(path), 8, "agents.pair")]


def test_a_nested_agents_warning_keeps_its_own_line_once(tmp_path: Path) -> None:
    from orchestrator.config import load_config

    path = tmp_path / "chain.yaml"
    path.write_text(
        'providers:\n  fn: {type: function, path: "json:dumps"}\n'
        "agents:\n  outer: {providers: [inner, fn]}\n"
        "  inner: {providers: [fn], hedge_after: 0.5}\n"
    )
    with pytest.warns(IgnoredSetting) as w:
        load_config(path)
    assert [(x.lineno, str(x.message)[:13]) for x in w] == [(5, "agents.inner:")]
