"""The root of the taxonomy and the base of provider failures.

The root's class attributes are what a failure means to a run (``retried``,
``hands_over``, ``counts_for_health``, ``retried_last``, ``reason``,
``overridable``); every kind overrides them. A provider failure carries its
provider and HTTP status, prints them and pickles with them.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["FailoverError", "ProviderError", "describe"]


class FailoverError(Exception):
    """The root of every exception this library raises; catch it to catch them all.

    Its class attributes are what a failure means to a run; subclasses override
    them. The root's values also stand for any exception from outside the tree
    (a bug in a user's provider, a library error): retried, then handed over,
    counted for health, with no particular reason. ``overridable`` is False where
    ``retry_on``/``fallback_on`` may not change the decision.
    """

    retried: ClassVar[bool] = True
    retried_last: ClassVar[bool] = False
    hands_over: ClassVar[bool] = True
    counts_for_health: ClassVar[bool] = True
    reason: ClassVar[str | None] = None
    overridable: ClassVar[bool] = True


def describe(error: BaseException) -> dict[str, Any]:
    """A safe summary of ``error`` (type and kind only) for events and hand-over payloads."""
    return {"error_kind": getattr(error, "kind", "transient"), "error_type": type(error).__name__}


class ProviderError(FailoverError):
    """A provider call failed; the subclass says what the engine does about it.

    ``provider`` is the provider's name, ``status`` the HTTP status when there
    was one (CLI agents put the API's status here, their exit code in the
    message). Safe to log: holds no request text, no key.
    """

    kind: str = "provider_error"
    retried: ClassVar[bool] = False

    def __init__(
        self,
        message: str = "",
        *,
        provider: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status

    def _kwargs(self) -> dict[str, Any]:
        return {"provider": self.provider, "status": self.status}

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructor arguments need an explicit reduce to pickle.
        return (_rebuild, (type(self), self.message, self._kwargs()), self.__dict__)

    def __str__(self) -> str:
        parts = []
        if self.provider:
            parts.append(f"[{self.provider}]")
        if self.status is not None:
            parts.append(f"HTTP {self.status}:")
        if self.message:
            parts.append(self.message)
        return " ".join(parts) or type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


def _rebuild(cls: type[ProviderError], message: str, kwargs: dict[str, Any]) -> ProviderError:
    return cls(message, **kwargs)
