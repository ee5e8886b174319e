"""A vendor's error text reaches ``str(FallbackError)``, which ``failover run`` prints to a
terminal: terminal escapes and bidi overrides in it are neutered, over real loopback HTTP."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError
from providers import HTTPFallback, OpenAIChat
from providers.simulator import Fault, SimulatedServer

HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b[31mEVIL\x9b1m \u202eevil\x00"


def _clean(text: str) -> bool:
    bad = [c for c in text if (ord(c) < 32 or 0x7F <= ord(c) < 0xA0) or c == "\u202e"]
    return not bad


async def test_terminal_escapes_from_an_error_body_never_reach_the_message(
    sim: SimulatedServer,
) -> None:
    sim.set_default("openai", Fault.status(503, body={"error": {"message": HOSTILE}}))
    sim.set_default("http", Fault.status(500, body=HOSTILE))
    agent = FallbackAgent(
        [
            OpenAIChat("m", base_url=sim.openai_url, api_key="sk-test"),
            HTTPFallback(sim.http_url),
        ],
        max_retries=0,
    )

    async def one() -> str:
        with pytest.raises(FallbackError) as info:
            await agent.run("hi")
        return str(info.value)

    texts = await asyncio.gather(*(one() for _ in range(100)))
    for text in texts:
        assert _clean(text), repr(text)
        assert "EVIL" in texts[0]  # the words stay; only the control characters go
