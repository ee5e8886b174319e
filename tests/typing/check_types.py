"""Typed usage of the public API; ``test_types.py`` runs ``mypy --strict`` over it.

Not collected by pytest (no ``test_`` prefix): it is read by the type checker only.
Each ``assert_type`` is a claim about what a user's editor and type checker see.
"""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from orchestrator import (
    FallbackAgent,
    Parallel,
    Phase,
    Result,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowResult,
    only,
)
from orchestrator.errors import ServerError
from providers import FunctionProvider, OpenAIChat


class Review(BaseModel):
    verdict: str
    score: int


def answer(request: object) -> str:
    return "ok"


agent = FallbackAgent(
    [OpenAIChat("gpt-4o-mini"), FunctionProvider(answer, name="local")],
    retry_strategy="linear",
    jitter="full",
    mid_stream="continue",
    retry_on=ServerError,
    fallback_on=only(ServerError, TimeoutError),
)
policy = RetryPolicy(max_retries=1, strategy="none", jitter=None)


async def typed_results() -> None:
    plain = await agent.run("hi")
    assert_type(plain, Result[None])
    assert_type(plain.text, str)
    review = await agent.run("hi", schema=Review)
    assert_type(review, Result[Review])
    assert_type(review.value.score, int)
    bare: Result = review  # ``Result`` without a parameter keeps working
    assert_type(bare.value, Any)


def typed_sync() -> None:
    assert_type(agent.run_sync("hi", schema=Review), Result[Review])
    assert_type(agent.run_sync("hi").text, str)


def typed_workflow() -> None:
    step = Step("review", agent, prompt="Review: {input}", schema=Review)
    assert_type(step.node, FallbackAgent)
    wrapped = Step("local", FunctionProvider(answer, name="fn"))
    assert_type(wrapped.node, FallbackAgent)
    flow = Workflow(Phase("Review", Parallel(step, wrapped)))
    out = flow.run_sync("the diff")
    assert_type(out, WorkflowResult)
    assert_type(out["review"], Result)
    nested = Step("nested", flow)
    assert_type(nested.node, FallbackAgent)
