"""Fake providers for routing tests: each answers after its own (fake) latency."""

from __future__ import annotations

from collections import Counter

from orchestrator import Request, Response
from orchestrator.errors import ServerError
from orchestrator.testing import FakeClock


class Timed:
    """A provider whose reply takes ``latency`` seconds of fake time; ``down`` makes it
    fail (a 503) after that time. Counts its calls and the most in flight at once."""

    def __init__(self, name: str, clock: FakeClock, latency: float = 0.1) -> None:
        self.name, self.clock, self.latency = name, clock, latency
        self.down = False
        self.calls = 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        self.clock.advance(self.latency)
        if self.down:
            raise ServerError("503", provider=self.name)
        return Response(f"from {self.name}")


def shares(names: list[str]) -> dict[str, float]:
    """Each name's share of ``names``."""
    counts = Counter(names)
    return {k: v / len(names) for k, v in counts.items()}
