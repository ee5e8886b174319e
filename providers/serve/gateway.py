"""The gateway's logic, whatever the HTTP server: routes, auth, load shedding, the run of a call.

:class:`Gateway` answers one :class:`~providers.serve.exchange.Exchange` at a time;
the servers (:mod:`providers.serve.app` on aiohttp, :mod:`providers.serve.rsgi` on
granian) only adapt their requests to it. Every model endpoint follows the same
steps: authenticate (401), shed load (503 beyond ``max_in_flight``), read the body
within its cap, deadline and rate (:mod:`providers.serve.intake`), parse it in the
client's wire format, find the model, run or stream it
(:mod:`providers.serve.streaming`), and answer in the same format, errors included.
Any other path gets a 404 in the client's format naming the base URL to use
(:mod:`providers.serve.misrouted`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from orchestrator.capacity import Refusal, default_capacity, used_by
from providers.serve import anthropic_wire, fields
from providers.serve.anthropic_wire import AnthropicWire
from providers.serve.auth import METRICS_ENV, GatewayKeys, presented_key
from providers.serve.call import ClientCall, Wire
from providers.serve.exchange import Exchange, Reply, json_reply
from providers.serve.failures import Failure
from providers.serve.fields import body_object
from providers.serve.intake import read_body
from providers.serve.misrouted import misrouted
from providers.serve.models import Model, Models
from providers.serve.openai_wire import OpenAIWire
from providers.serve.probes import healthz, metrics, readyz
from providers.serve.quotas import KeyQuota, Metered, quota_failure, want_of
from providers.serve.responses_wire import ResponsesWire
from providers.serve.settings import GatewaySettings
from providers.serve.streaming import failed, failure_reply, run_whole, stream
from providers.serve.tokens import estimate_tokens

__all__ = ["Gateway"]

_OPENAI = OpenAIWire()
_ANTHROPIC = AnthropicWire()
_RESPONSES = ResponsesWire()
_WIRES: dict[str, Wire] = {"openai": _OPENAI, "anthropic": _ANTHROPIC, "responses": _RESPONSES}
_MODEL_PREFIX = "/v1/models/"
#: The call's affinity key, before the body's prompt_cache_key / user / metadata.user_id.
_AFFINITY = "x-failover-affinity"

Handler = Callable[[Exchange], Awaitable[Reply | None]]


def _refused() -> Failure:
    return Failure(
        401,
        "authentication",
        "a valid gateway key is required (Authorization: Bearer KEY or x-api-key: KEY)",
    )


_METRICS_REFUSED = Failure(
    401,
    "authentication",
    f"/metrics needs a gateway key or a metrics key ({METRICS_ENV}, --metrics-keys-file), "
    "or a gateway started with --public-metrics",
)
_BUSY = Failure(503, "overloaded", "the gateway is at its in-flight limit; retry shortly", 1)


def _presents(ex: Exchange, allows: Callable[[str | None], bool]) -> bool:
    # Either header may carry the gateway key (the other may hold a vendor key); both are
    # always compared, so the time taken does not say which one matched.
    bearer = allows(presented_key(ex.header("authorization"), None))
    return allows(presented_key(None, ex.header("x-api-key"))) | bearer


def _quota_of(ex: Exchange, keys: GatewayKeys) -> KeyQuota | None:
    """The quota of the gateway key the client sent (in either header; both compared)."""
    api_key = keys.quota_of(presented_key(None, ex.header("x-api-key")))
    bearer = keys.quota_of(presented_key(ex.header("authorization"), None))
    return api_key or bearer


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "created": 0,
        "owned_by": "failover",
        "type": "model",
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
    }


class Gateway:
    """Serves ``models`` to clients holding one of ``keys`` (an empty ``keys`` lets every
    client in), within ``settings``' limits; :meth:`handle` answers one exchange."""

    def __init__(self, models: Models, keys: GatewayKeys, settings: GatewaySettings) -> None:
        self.models, self.keys, self.settings = models, keys, settings
        self.in_flight = 0
        get: dict[str, Handler] = {
            "/": self._healthz,  # clients probe the base URL (Claude Code sends HEAD /)
            "/healthz": self._healthz,
            "/readyz": self._readyz,
            "/metrics": self._metrics,
            "/v1/models": self._list_models,
        }
        post: dict[str, Handler] = {
            "/v1/chat/completions": self._endpoint(_OPENAI),
            "/v1/responses": self._endpoint(_RESPONSES),
            "/v1/messages": self._endpoint(_ANTHROPIC),
            "/v1/messages/count_tokens": self._count_tokens,
        }
        self._routes = {"GET": get, "HEAD": get, "POST": post}

    def handle(self, ex: Exchange) -> Awaitable[Reply | None]:
        """The reply to ``ex`` (to await), or ``None`` when it was answered as a stream."""
        handler = self._routes.get(ex.method, {}).get(ex.path)
        if handler is not None:
            return handler(ex)  # the route's own coroutine: one around it only forwarded
        return self._unrouted(ex)

    async def _unrouted(self, ex: Exchange) -> Reply:
        """A model by name (``/v1/models/NAME``), else a 404 naming the base URL to use."""
        if ex.method in ("GET", "HEAD") and ex.path.startswith(_MODEL_PREFIX):
            return self._one_model(ex, ex.path[len(_MODEL_PREFIX) :])
        wire, failure = misrouted(ex)
        return failure_reply(_WIRES[wire], failure)

    @property
    def keys(self) -> GatewayKeys:
        """The keys allowed in; set anew to change them (whether there are any is decided
        then, once, not on every request)."""
        return self._keys

    @keys.setter
    def keys(self, keys: GatewayKeys) -> None:
        self._keys, self._keyless = keys, not keys

    def _authenticated(self, ex: Exchange) -> bool:
        return self._keyless or _presents(ex, self.keys.allows)

    async def _healthz(self, ex: Exchange) -> Reply:
        return healthz()

    async def _readyz(self, ex: Exchange) -> Reply:
        return readyz(self.models)

    async def _metrics(self, ex: Exchange) -> Reply:
        """``/metrics`` for a gateway or metrics key, or anyone with ``public_metrics``."""
        public = self.settings.public_metrics or self._keyless
        if public or _presents(ex, self.keys.allows_metrics):
            return await metrics(self.models.health_stores())
        return failure_reply(_OPENAI, _METRICS_REFUSED)

    async def _list_models(self, ex: Exchange) -> Reply:
        if not self._authenticated(ex):
            return failure_reply(_OPENAI, _refused())
        # One list both SDKs read: OpenAI's fields and Anthropic's side by side.
        data = [_model_entry(name) for name in self.models.names()]
        body = {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
        return json_reply(200, body)

    def _one_model(self, ex: Exchange, name: str) -> Reply:
        if not self._authenticated(ex):
            return failure_reply(_OPENAI, _refused())
        if self.models.get(name) is None:
            return failure_reply(_OPENAI, self._unknown_model(name))
        return json_reply(200, _model_entry(name))

    def _unknown_model(self, name: str) -> Failure:
        shown = name if len(name) <= 64 else name[:64] + "..."
        names = ", ".join(self.models.names())
        return Failure(404, "not_found", f"no model {shown!r}; available: {names}")

    def _endpoint(self, wire: Wire) -> Handler:
        """The handler of a model endpoint speaking ``wire``."""

        async def handle(ex: Exchange) -> Reply | None:
            if not self._authenticated(ex):  # before a slot: a caller without a key is not load
                return failure_reply(wire, _refused())
            if self.in_flight >= self.settings.max_in_flight:
                return failure_reply(wire, _BUSY)
            self.in_flight += 1
            try:
                try:
                    # The body as a JSON object (:func:`~providers.serve.intake.read_body`),
                    # read in place: a method around it was a coroutine that only forwarded.
                    call = wire.parse(body_object(await read_body(ex, self.settings)))
                    header = ex.header(_AFFINITY)
                    if header is not None:  # most calls carry none: no key, no copy for them
                        key = fields.affinity(header, call.affinity)
                        if key != call.affinity:
                            call = replace(call, affinity=key)
                except Exception as exc:  # BadRequest, or a parsing gap: the client's shape
                    return failure_reply(wire, failed(exc))
                model = self.models.get(call.model)
                if model is None:
                    return failure_reply(wire, self._unknown_model(call.model))
                quota = None if self._keyless else _quota_of(ex, self.keys)
                if quota is not None:
                    return await self._within_quota(ex, wire, call, model, quota)
                if call.stream:
                    return await stream(ex, wire, call, model)
                return await run_whole(wire, call, model)
            finally:
                self.in_flight -= 1

        return handle

    async def _within_quota(
        self, ex: Exchange, wire: Wire, call: ClientCall, model: Model, quota: KeyQuota
    ) -> Reply | None:
        """Run ``call`` within its key's limits and budget: one atomic take in the capacity
        store first (429 when refused), settled with the call's real usage and cost after."""
        stores = self.models.health_stores()
        store = getattr(stores[0], "capacity", None) if stores else None
        store = default_capacity() if store is None else store  # the process's, as agents
        want = want_of(quota, call.request, model.node)
        ticket = await store.take(want)
        if isinstance(ticket, Refusal):
            return failure_reply(wire, quota_failure(quota, ticket))
        metered: Any = Metered(model)
        try:
            if call.stream:
                return await stream(ex, wire, call, metered)
            return await run_whole(wire, call, metered)
        finally:
            tokens, cost = used_by(metered.attempts or (), want.price)
            known = metered.attempts is not None
            settled = store.settle(ticket, tokens if known else None, cost if known else want.cost)
            if settled is not None:
                await settled

    async def _count_tokens(self, ex: Exchange) -> Reply:
        if not self._authenticated(ex):
            return failure_reply(_ANTHROPIC, _refused())
        try:
            model, parsed = anthropic_wire.parse_request(
                body_object(await read_body(ex, self.settings)), need_max_tokens=False
            )
        except Exception as exc:
            return failure_reply(_ANTHROPIC, failed(exc))
        if self.models.get(model) is None:
            return failure_reply(_ANTHROPIC, self._unknown_model(model))
        return json_reply(200, {"input_tokens": estimate_tokens(parsed)})
