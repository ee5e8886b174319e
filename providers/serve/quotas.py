"""Per gateway key limits and budgets: one atomic take before a call, settled after it.

A key file line may carry the key's quota after its digest, as a YAML flow mapping::

    sha256:<64 hex>  {id: team-a, limits: {rpm: 60, tpm: 100000, max_concurrency: 4},
                      budget: {usd: 5, per: day}}

(on one line). ``id`` names the key where a name is shown (``/metrics``, messages);
it defaults to ``key<line>``, never to anything derived from the key. Each call
with such a key reserves one request, its input tokens plus ``max_tokens`` and
its cost at the dearest price among the model's providers, in the gateway's
capacity store (its agents' health store: memory, or Redis across replicas), and
settles with what the call's attempts used and cost.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import yaml

from orchestrator.capacity import Budget, Charge, Limits, Refusal, Want
from orchestrator.config.limits import BoundedYamlLoader
from orchestrator.errors import FallbackError
from orchestrator.tokens import input_tokens_counted
from orchestrator.types import Attempt, Request
from providers.serve.failures import Failure

__all__ = ["KeyQuota", "Metered", "parse_quota", "quota_failure", "want_of"]

_FIELDS = frozenset({"id", "limits", "budget"})
_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")  # shown in labels, messages and store keys


@dataclass(frozen=True, slots=True)
class KeyQuota:
    """One gateway key's ``limits`` and ``budget`` (either may be None), named ``id``."""

    id: str
    limits: Limits | None = None
    budget: Budget | None = None


def parse_quota(text: str, where: str, line: int) -> KeyQuota | None:
    """The quota written after a digest on key file line ``line`` (None when nothing is);
    ``ValueError`` naming ``where`` and the field, never quoting the line."""
    if not text:
        return None
    loader = BoundedYamlLoader(text, where)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError:
        raise ValueError(
            f"{where}: after the digest, expected a mapping such as "
            "{id: team-a, limits: {rpm: 60}, budget: {usd: 5, per: day}}"
        ) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict) or not set(data) <= _FIELDS:
        raise ValueError(f"{where}: after the digest, a mapping of id, limits and budget only")
    ident = data.get("id", f"key{line}")
    if not isinstance(ident, str) or _ID.fullmatch(ident) is None:
        raise ValueError(f"{where}: id must be 1 to 64 of A-Z a-z 0-9 . _ - (a metric label)")
    try:
        limits = None if data.get("limits") is None else Limits(**_mapping(data, "limits"))
        budget = None if data.get("budget") is None else Budget(**_mapping(data, "budget"))
    except TypeError:  # an unknown field: its message would quote the file's text
        raise ValueError(
            f"{where}: limits takes rpm, tpm, max_concurrency, window; budget takes usd, per"
        ) from None
    except ValueError as exc:  # Limits' and Budget's own: name the field and the value
        raise ValueError(f"{where}: {exc}") from None
    return KeyQuota(ident, limits, budget)


def _mapping(data: dict[str, Any], field: str) -> dict[str, Any]:
    value = data[field]
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{field}: expected a mapping such as {{rpm: 60}}")
    return value


def _dearest(nodes: Iterable[Any]) -> tuple[float, float] | None:
    """The dearest (input, output) USD per 1M tokens among ``nodes``' providers (chains
    walked): each one's ``price``, else the dearest of its family (``dearest_price``);
    None when none has either."""
    pending, dearest = list(nodes), None
    while pending:
        node = pending.pop()
        children = getattr(node, "children", None)
        if isinstance(children, tuple):
            pending.extend(children)
            continue
        price = getattr(node, "price", None) or getattr(node, "dearest_price", None)
        if isinstance(price, tuple) and len(price) == 2:
            dearest = price if dearest is None else max(dearest, price, key=sum)
    return dearest


def want_of(quota: KeyQuota, request: Request, node: Any) -> Want:
    """What one call with ``quota``'s key reserves: a request, its input tokens plus
    ``max_tokens``, and its cost at the dearest price among ``node``'s providers (also what
    a reply with no cost is counted at; 0 when none has a price: the budget is then
    checked against what was spent so far)."""
    counted = input_tokens_counted(request) if quota.limits or quota.budget else 0
    tokens = counted + (request.max_tokens or 0)
    charges: tuple[Charge, ...] = ()
    cost, price = 0.0, None
    if quota.budget is not None:
        charges = (Charge(f"gateway-key:{quota.id}", quota.budget, "provider"),)
        price = _dearest([node])
        if price is not None:
            cost = (counted * price[0] + (request.max_tokens or 0) * price[1]) / 1_000_000
    return Want(f"gateway-key:{quota.id}", quota.limits, tokens, charges, cost, price)


def quota_failure(quota: KeyQuota, refusal: Refusal) -> Failure:
    """The client's answer to a refused key: 429 ``rate_limited`` (a limit) or 429
    ``insufficient_quota`` (its budget, as OpenAI spells a spent quota), with
    ``Retry-After`` when it frees."""
    wait = None if refusal.free_in is None else max(1, math.ceil(refusal.free_in))
    if refusal.reason == "budget":
        per = quota.budget.per if quota.budget is not None else "period"
        message = f"gateway key {quota.id}: its budget is spent for this {per}"
        return Failure(429, "insufficient_quota", message, wait)
    message = f"gateway key {quota.id}: at its {refusal.which} limit"
    return Failure(429, "rate_limited", message, wait if wait is not None else 1)


class Metered:
    """A served model whose runs and streams record their attempts (``attempts``) for the
    key's settlement; everything else is the model's."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.attempts: tuple[Attempt, ...] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    async def run(self, request: Request, affinity: str | None = None) -> Any:
        try:
            result = await self._model.run(request, affinity)
        except FallbackError as exc:
            self.attempts = tuple(exc.attempts)
            raise
        self.attempts = tuple(result.attempts)
        return result

    @asynccontextmanager
    async def stream(self, request: Request, affinity: str | None = None) -> AsyncIterator[Any]:
        try:
            async with self._model.stream(request, affinity) as chunks:
                yield chunks
                result = getattr(chunks, "result", None)
                if result is not None:
                    self.attempts = tuple(result.attempts)
        except FallbackError as exc:
            self.attempts = tuple(exc.attempts)
            raise
