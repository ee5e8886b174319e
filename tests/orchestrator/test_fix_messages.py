"""Messages that name the fix: each mistake a new user made says what to write instead."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestrator import (
    FallbackAgent,
    HookError,
    Message,
    Phase,
    Request,
    Response,
    Step,
    Tool,
    ToolCall,
    Workflow,
)
from orchestrator.config import ConfigError, load_config
from orchestrator.errors import InvalidOutput
from orchestrator.function import FunctionProvider
from tests.conftest import Scripted


async def test_a_json_schema_dict_as_schema_names_pydantic_and_request_json_schema() -> None:
    agent = FallbackAgent([Scripted("a", ['{"x": 1}'])])
    with pytest.raises(TypeError) as err:
        await agent.run("hi", schema={"type": "object"})  # type: ignore[arg-type]
    message = str(err.value)
    assert "unhashable" not in message
    assert "schema= takes a type pydantic validates" in message and "got a dict" in message
    assert "Request(prompt, json_schema={...})" in message


async def test_an_accept_that_returns_none_says_it_must_return_a_bool() -> None:
    agent = FallbackAgent([Scripted("a", ["one"]), Scripted("b", ["two"])], accept=lambda r: None)
    with pytest.raises(HookError) as err:
        await agent.run("hi")
    assert "returned NoneType; return a bool" in str(err.value)


async def test_accept_returning_bools_in_many_runs_in_flight_still_decides() -> None:
    agent = FallbackAgent(
        [Scripted("a", ["bad"] * 50), Scripted("b", ["good"] * 50)],
        accept=lambda r: r.text == "good",
    )
    results = await asyncio.gather(*(agent.run("hi") for _ in range(50)))
    assert {r.handled_by for r in results} == {"b"}


@pytest.mark.parametrize(
    ("model", "cls"),
    [
        ("gpt-4o", "OpenAIChat"),
        ("claude-sonnet-4-5", "AnthropicMessages"),
        ("gemini-2.5-flash", "GeminiGenerate"),
        ("llama3", "OpenAIChat"),
    ],
)
def test_a_model_name_as_a_child_suggests_the_provider_for_it(model: str, cls: str) -> None:
    with pytest.raises(TypeError) as err:
        FallbackAgent([model])  # type: ignore[list-item]
    assert f"from providers import {cls}; {cls}({model!r})" in str(err.value)


def test_tool_calls_given_as_dicts_suggest_toolcall() -> None:
    call = {"id": "c1", "name": "lookup", "arguments": {"q": "x"}}
    with pytest.raises(TypeError, match=r"expected ToolCall, got dict: write ToolCall\(id, name"):
        Message("assistant", "", tool_calls=(call,))  # type: ignore[arg-type]
    openai_style = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with pytest.raises(TypeError, match=r"json.loads\(c\['function'\]\['arguments'\]\)"):
        Request(messages=[{"role": "assistant", "content": "", "tool_calls": [openai_style]}])
    # The documented dict form in a message dict still converts.
    request = Request(messages=[{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert request.messages[0].tool_calls == (ToolCall("c1", "lookup", {"q": "x"}),)


async def test_a_provider_replying_with_tool_call_dicts_is_told_to_use_toolcall() -> None:
    bad = {"id": "c1", "name": "lookup", "arguments": {"q": "x"}}
    provider = FunctionProvider(lambda r: Response("", tool_calls=(bad,)), name="fn")  # type: ignore[arg-type]
    good = FunctionProvider(
        lambda r: Response("", tool_calls=(ToolCall("c1", "lookup", {"q": "x"}),)), name="ok"
    )
    agent = FallbackAgent([provider, good], max_retries=0, schema_retries=0)
    result = await agent.run(Request("hi", tools=[Tool("lookup")]))
    assert result.handled_by == "ok"
    error = result.attempts[0].error
    assert isinstance(error, InvalidOutput)
    assert "Response.tool_calls: expected ToolCall, got dict: write ToolCall(" in str(error)


def test_a_yaml_tab_is_located_and_says_indent_with_spaces(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text('providers:\n\tfn: {type: function, path: "json:dumps"}\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == (
        f"{path}:2: invalid YAML: a tab at column 1: YAML allows none here; indent with spaces"
    )


async def test_a_missing_workflow_input_says_how_to_give_it() -> None:
    flow = Workflow(Phase("p", Step("s", Scripted("s", ["x"]), prompt="Review {diff}")))
    with pytest.raises(ValueError) as err:
        await flow.run({})
    message = str(err.value)
    assert "--input diff=... on the command line" in message
    assert "run({'diff': ...}) in Python" in message


def test_a_pattern_re2_cannot_run_leaves_no_cxx_log_on_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    from orchestrator.tools import check_tools

    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)b"}}}
    with pytest.raises(ValueError, match="has no linear-time match"):
        check_tools([Tool("look_ahead_probe", parameters=schema)])
    err = capfd.readouterr().err
    assert "re2.cc" not in err and "absl" not in err and err == ""
