"""Usage: the tokens a provider reported for one call (what its price is applied to)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.frozen import slot_init

__all__ = ["Usage"]


@slot_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts reported by a provider.

    ``input_tokens`` counts every input token, those read from or written to the
    vendor's prompt cache included; ``cache_read_tokens`` and ``cache_write_tokens``
    say how many of them were (0 when the vendor did not say), so a price with cache
    rates bills them at those rates instead of the input rate.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """The input tokens neither read from nor written to the prompt cache."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)
