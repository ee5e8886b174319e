"""A real HTTP server on loopback that speaks the OpenAI, Anthropic and Gemini
wire formats (JSON and SSE) and fails on cue: the test double for every chain.

Use it in tests, examples and benchmarks instead of a mock: providers talk to
it over real HTTP, so their error mapping, stream parsing and timeouts are the
ones that run in production. Not a load generator and not a model: replies are
derived from the prompt deterministically.

In a test (same event loop)::

    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.ok("hello")])
        provider = OpenAIChat("gpt-4o-mini", base_url=sim.openai_url, api_key="sk-test")
        ...
        assert sim.count("openai") == 2

From synchronous code: ``with SimulatedServer.in_thread() as sim: ...`` (own
thread and loop). Standalone: ``python -m providers.simulator --port 8787
--script faults.json`` or ``failover simulate`` (see ``command``).

Routes (``sim.url`` is ``http://127.0.0.1:PORT``):

===========  ================================================================
openai       ``POST /openai/v1/chat/completions`` (``"stream": true`` for SSE)
responses    ``POST /openai/v1/responses``: the OpenAI Responses API (JSON, or
             semantic SSE events with ``"stream": true``); same base URL
             (``sim.openai_url``) as ``openai``, its own script and count
anthropic    ``POST /anthropic/v1/messages`` (``"stream": true`` for SSE)
gemini       ``POST /gemini/v1beta/models/{model}:generateContent`` and
             ``:streamGenerateContent?alt=sse``
http         ``POST /http/complete``: JSON in, ``{"text": ...}`` out
azure        Azure OpenAI (``sim.azure_url`` is the endpoint): ``POST
             /azure/openai/deployments/{d}/chat/completions?api-version=...``
             and ``/azure/openai/v1/chat/completions``; ``api-key`` or
             ``Authorization: Bearer`` required (401 without, not counted)
bedrock      Amazon Bedrock (``sim.bedrock_url`` is the endpoint): ``POST
             /bedrock/model/{id}/converse``, ``/converse-stream`` (AWS
             event-stream frames), ``/invoke`` and ``/invoke-with-response-stream``
             (Anthropic Messages inside); SigV4-signed with
             ``sim.aws_access_key_id``/``sim.aws_secret_access_key`` (403 else,
             not counted)
vertex_*     Vertex AI (``sim.vertex_url``, the API root): ``POST /vertex/v1/
             projects/P/locations/L/publishers/anthropic/models/M:rawPredict``
             (``vertex_anthropic``) and ``.../publishers/google/models/M:
             generateContent`` (``vertex_gemini``); ``Authorization: Bearer``
             with ``vertex_token`` required (401 otherwise, not counted)
===========  ================================================================

Each route answers every request with the next fault of its script, and with
its default (``Fault.ok()`` unless set) once the script is used up.
``Fault.ok(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])``
makes the model call tools, in each route's own format (JSON and SSE);
:meth:`SimulatedServer.tools` lists the tools each request offered.

Script file format (``--script FILE``): a JSON object mapping a route to a list
of fault specs, consumed in order, plus an optional ``"defaults"`` object
mapping a route to one spec::

    {
      "openai": [{"status": 503}, {"rate_limited": 0.5}, {"ok": "hello"}],
      "anthropic": ["overloaded", {"delay": 0.2, "then": {"ok": "late"}}],
      "defaults": {"gemini": {"flaky": 0.3, "seed": 7, "fault": {"status": 503}}}
    }

A spec is ``{"<Fault factory name>": <argument>, **keyword arguments}``; see
:meth:`Fault.from_spec`. While running, the server can also be driven over
HTTP: ``GET /_sim/counts``, ``POST /_sim/script`` (same format as the file),
``POST /_sim/reset``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Coroutine, Iterable, Iterator, Mapping
from typing import Any

from providers.simulator.faults import Fault
from providers.simulator.http11 import Exchange, HTTPServer
from providers.simulator.respond import parse_body, respond, send_json
from providers.simulator.routes import BY_ROUTE, refused, wire_for
from providers.simulator.script import ROUTES, check_route, parse_script

__all__ = ["ROUTES", "SIM_AWS_KEY_ID", "SIM_AWS_SECRET", "SIM_KEY", "Fault", "SimulatedServer"]

#: The placeholder key :meth:`SimulatedServer.environment` gives each vendor: any key will do.
SIM_KEY = "sim-key"
#: The AWS credentials the bedrock route checks signatures with, unless given others.
SIM_AWS_KEY_ID = "AKIASIMULATEDKEY0000"
SIM_AWS_SECRET = "sim-aws-secret-access-key"


FaultLike = Fault | Mapping[str, Any] | str


def _fault(value: FaultLike) -> Fault:
    return value if isinstance(value, Fault) else Fault.from_spec(value)


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


class SimulatedServer:
    """The simulated provider server; an async context manager that runs it.

    ``port=0`` picks a free port. ``script`` and ``defaults`` preload faults
    (route -> faults, route -> fault). Up to ``max_recorded`` requests per route
    are kept for :meth:`requests` (the oldest are dropped; counts stay exact).
    The bedrock route checks SigV4 signatures with ``aws_access_key_id`` and
    ``aws_secret_access_key`` (settable); the Vertex routes require ``vertex_token``.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        script: Mapping[str, Iterable[FaultLike]] | None = None,
        defaults: Mapping[str, FaultLike] | None = None,
        max_recorded: int = 10_000,
        vertex_token: str = SIM_KEY,
    ) -> None:
        self._host, self._port, self.vertex_token = host, port, vertex_token
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Fault]] = {r: deque() for r in ROUTES}
        self._defaults: dict[str, Fault] = dict.fromkeys(ROUTES, Fault.ok())
        self._counts: dict[str, int] = dict.fromkeys(ROUTES, 0)
        self._records: dict[str, deque[tuple[Any, ...]]] = {
            r: deque(maxlen=max_recorded) for r in ROUTES
        }
        self._seq = self._in_flight = 0
        self.aws_access_key_id, self.aws_secret_access_key = SIM_AWS_KEY_ID, SIM_AWS_SECRET
        self._server: HTTPServer | None = None
        for route, faults in (script or {}).items():
            self.script(route, faults)
        for route, fault in (defaults or {}).items():
            self.set_default(route, fault)

    # -- addresses ----------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of the running server."""
        if self._server is None:
            raise RuntimeError(
                "SimulatedServer.url: the server is not running; "
                "use `async with SimulatedServer() as sim` or `SimulatedServer.in_thread()`"
            )
        return f"http://{self._host}:{self._port}"

    @property
    def port(self) -> int:
        """The TCP port the server listens on (known once started)."""
        return self._port

    @property
    def openai_url(self) -> str:
        """Base URL for OpenAI clients (``.../openai/v1``)."""
        return f"{self.url}/openai/v1"

    @property
    def anthropic_url(self) -> str:
        """Base URL for Anthropic clients (``.../anthropic``)."""
        return f"{self.url}/anthropic"

    @property
    def gemini_url(self) -> str:
        """Base URL for Gemini clients (``.../gemini``; add ``/v1beta/models/...``)."""
        return f"{self.url}/gemini"

    @property
    def azure_url(self) -> str:
        """The Azure OpenAI endpoint (``.../azure``; ``AzureOpenAI(endpoint=...)``)."""
        return f"{self.url}/azure"

    @property
    def bedrock_url(self) -> str:
        """The Bedrock runtime endpoint (``.../bedrock``; ``BedrockConverse(endpoint_url=...)``)."""
        return f"{self.url}/bedrock"

    @property
    def vertex_url(self) -> str:
        """The Vertex AI API root (``.../vertex/v1``; ``base_url=`` of the Vertex providers)."""
        return f"{self.url}/vertex/v1"

    @property
    def http_url(self) -> str:
        """The URL of the plain JSON route (``.../http/complete``)."""
        return f"{self.url}/http/complete"

    def environment(self) -> dict[str, str]:
        """The variables that send unchanged code here: each vendor provider's base-URL
        variables (the official SDKs' too: ``OPENAI_BASE_URL``...), a placeholder key for
        each vendor (the server checks none), Azure's endpoint and key, AWS's endpoint, region
        and the keys the bedrock route checks signatures with, Vertex AI's root, project,
        location and token (``vertex_token``), and ``FAILOVER_SIM_URL``, the root.
        ``failover simulate`` prints them as ``export`` lines."""
        from providers.anthropic import AnthropicMessages
        from providers.gemini import GeminiGenerate
        from providers.openai import OpenAIChat

        routes = ((OpenAIChat, self.openai_url), (AnthropicMessages, self.anthropic_url))
        env = {"FAILOVER_SIM_URL": self.url}
        for vendor, url in (*routes, (GeminiGenerate, self.gemini_url)):
            env.update(dict.fromkeys(vendor.base_url_vars, url))
            env[vendor.env_vars[0]] = SIM_KEY
        env.update(AZURE_OPENAI_ENDPOINT=self.azure_url, AZURE_OPENAI_API_KEY=SIM_KEY)
        env.update(
            AWS_ENDPOINT_URL_BEDROCK_RUNTIME=self.bedrock_url,
            AWS_REGION="us-east-1",
            AWS_ACCESS_KEY_ID=self.aws_access_key_id,
            AWS_SECRET_ACCESS_KEY=self.aws_secret_access_key,
        )
        env.update(dict.fromkeys(("VERTEX_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL"), self.vertex_url))
        env.update(GOOGLE_CLOUD_PROJECT="sim-project", GOOGLE_CLOUD_LOCATION="us-east5")
        env["GOOGLE_OAUTH_ACCESS_TOKEN"] = self.vertex_token
        return env

    # -- scripting and inspection ---------------------------------------------------

    def script(self, route: str, faults: Iterable[FaultLike]) -> None:
        """Set ``route``'s script, replacing what is left of the previous one;
        each request consumes the next fault, in order."""
        queue = deque(_fault(f) for f in faults)
        with self._lock:
            self._scripts[check_route(route)] = queue

    def set_default(self, route: str, fault: FaultLike) -> None:
        """What ``route`` does once its script is empty (initially ``Fault.ok()``)."""
        value = _fault(fault)
        with self._lock:
            self._defaults[check_route(route)] = value

    def count(self, route: str | None = None) -> int:
        """Requests received on ``route`` (all routes when None), faults included."""
        if route is None:
            return sum(self._counts.values())
        return self._counts[check_route(route)]

    def requests(self, route: str) -> list[dict[str, Any]]:
        """The requests received on ``route``, oldest first: dicts with ``method``,
        ``path``, ``query``, ``headers`` (lower-case names), ``body`` (the parsed
        JSON, or None when the body was not a JSON object) and ``at`` (when it arrived:
        ``time.monotonic()``)."""
        with self._lock:
            records = list(self._records[check_route(route)])
        return [
            {"method": m, "path": p, "query": dict(q), "headers": _lower(h), "body": b, "at": at}
            for m, p, q, h, b, at in records
        ]

    def tools(self, route: str) -> list[list[str]]:
        """The names of the tools each request on ``route`` offered, oldest first
        (``[]`` for a request without tools), whatever the route's wire format."""
        wire = BY_ROUTE[check_route(route)]
        return [wire.tool_names(r["body"] or {}) for r in self.requests(route)]

    def pending(self, route: str) -> int:
        """How many scripted faults ``route`` has not used yet."""
        return len(self._scripts[check_route(route)])

    @property
    def in_flight(self) -> int:
        """Requests being handled right now (hung ones included)."""
        return self._in_flight

    def reset(self) -> None:
        """Forget scripts, defaults, counts and recorded requests."""
        with self._lock:
            for route in ROUTES:
                self._scripts[route] = deque()
                self._defaults[route] = Fault.ok()
                self._counts[route] = 0
                self._records[route].clear()

    # -- serving ----------------------------------------------------------------------

    def _next_fault(self, route: str, record: tuple[Any, ...]) -> Fault:
        with self._lock:
            self._counts[route] += 1
            self._records[route].append(record)
            queue = self._scripts[route]
            return queue.popleft() if queue else self._defaults[route]

    def _handle(self, ex: Exchange) -> Coroutine[Any, Any, None] | None:
        path = ex.path
        wire = wire_for(path)
        if wire is None and path.startswith("/_sim/"):
            self._control(ex)
            return None
        if wire is None:
            routes = ", ".join(ROUTES)
            send_json(ex, 404, {"error": f"no route for {ex.method} {path}; routes: {routes}"})
            return None
        if ex.method != "POST":
            send_json(ex, 405, {"error": f"{path} takes POST, not {ex.method}"})
            return None
        aws_key = (self.aws_access_key_id, self.aws_secret_access_key)
        if refused(ex, wire, aws_key=aws_key, token=self.vertex_token):
            return None
        body = parse_body(ex.body)
        record = (ex.method, path, ex.query, ex.headers, body, time.monotonic())
        fault = self._next_fault(wire.route, record)
        self._seq += 1
        call = wire.parse(body or {}, path, ex.query, self._seq)
        if body is None:
            fault = Fault.bad_request()
        pending = respond(ex, wire, call, fault)
        return None if pending is None else self._track(pending)

    async def _track(self, pending: Coroutine[Any, Any, None]) -> None:
        self._in_flight += 1
        try:
            await pending
        finally:
            self._in_flight -= 1

    def _control(self, ex: Exchange) -> None:
        action = ex.path[len("/_sim/") :]
        try:
            if action == "counts":
                send_json(ex, 200, {r: self.count(r) for r in ROUTES})
                return
            if action == "reset" and ex.method == "POST":
                self.reset()
                send_json(ex, 200, {})
                return
            if action == "script" and ex.method == "POST":
                scripts, defaults = parse_script(json.loads(ex.body or b"{}"))
                for route, faults in scripts.items():
                    self.script(route, faults)
                for route, fault in defaults.items():
                    self.set_default(route, fault)
                send_json(ex, 200, {})
                return
        except ValueError as exc:
            send_json(ex, 400, {"error": str(exc)})
            return
        message = "control routes: GET /_sim/counts, POST /_sim/script, POST /_sim/reset"
        send_json(ex, 404, {"error": message})

    async def start(self) -> None:
        """Start listening (called by ``async with``)."""
        if self._server is not None:
            raise RuntimeError("SimulatedServer.start: already running")
        server = HTTPServer(self._handle)
        self._port = await server.start(self._host, self._port)
        self._server = server

    async def stop(self) -> None:
        """Stop: drop every connection (hung requests end at once), then close."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    async def __aenter__(self) -> SimulatedServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @classmethod
    @contextlib.contextmanager
    def in_thread(cls, **kwargs: Any) -> Iterator[SimulatedServer]:
        """Run a server on its own thread and event loop, for synchronous code."""
        sim = cls(**kwargs)
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(sim.start())
            except BaseException as exc:
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.close()

        thread = threading.Thread(target=run, name="SimulatedServer", daemon=True)
        thread.start()
        started.wait(30)
        if failure:
            raise failure[0]
        try:
            yield sim
        finally:
            asyncio.run_coroutine_threadsafe(sim.stop(), loop).result(timeout=30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
