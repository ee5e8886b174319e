"""``BedrockConverse``: a model on Amazon Bedrock in one region, over Converse and
ConverseStream (``POST /model/{modelId}/converse`` and ``/converse-stream``).

Requests are signed with SigV4 by botocore (:mod:`providers.bedrock.signing`) and
sent through the project's own transports (aiohttp, or the httpx client given);
streams are AWS event-stream frames (:mod:`providers.bedrock.eventstream`); errors,
before or inside a stream, are read by :mod:`providers.bedrock.errors`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any, Unpack
from urllib.parse import quote

from orchestrator import PROGRESS
from orchestrator.errors import GuardrailTriggered, InvalidOutput, ProviderError
from orchestrator.secrets import Secret
from orchestrator.telemetry import trace_headers
from orchestrator.types import Request, Response, ToolCallDelta
from providers.bedrock.converse import (
    CACHE_POINTS,
    GUARDRAIL_STOPS,
    ConverseStream,
    converse_body,
    read_reply,
    usage_of,
)
from providers.bedrock.errors import map_bedrock_error
from providers.bedrock.eventstream import Frame, FrameReader
from providers.bedrock.signing import AwsSigner, default_region
from providers.http.base import (
    VendorProvider,
    VendorSettings,
    join_url,
    load_json,
    load_json_async,
    off_loop,
)
from providers.http.body import ACCEPT_ENCODING
from providers.http.caller import Secrets, error_body
from providers.http.client import RawReply
from providers.http.endpoint import base_url_from_env

__all__ = ["BedrockConverse"]

_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}")
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
_EVENTS = "application/vnd.amazon.eventstream"


def _region(region: str | None, profile: str | None) -> str:
    region = region or os.environ.get("AWS_REGION") or default_region(profile)
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise ValueError(
            f"BedrockConverse.region={region!r}: give an AWS region such as 'us-east-1' "
            "(or set AWS_REGION)"
        )
    return region


class BedrockConverse(VendorProvider):
    """A model on Amazon Bedrock in one region.

    ``BedrockConverse("anthropic.claude-sonnet-4-6", region="us-east-1")`` posts to
    ``https://bedrock-runtime.us-east-1.amazonaws.com/model/{model_id}/converse``;
    ``model_id`` is a model id, a cross-region inference profile (``us.``, ``eu.``,
    ``apac.``, ``global.`` prefixes) or an ARN. ``endpoint_url=`` (else
    ``$AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, then ``$AWS_ENDPOINT_URL``, as botocore reads
    them) points it elsewhere, e.g. at ``failover simulate``.

    Credentials come from botocore's standard chain (``profile=`` picks a profile), or
    ``session=`` (a botocore or boto3 session) or ``credentials=`` (botocore
    credentials); they are resolved on a worker thread and refreshed before they
    expire. ``max_tokens`` is sent when the request sets none; ``cache_points`` (any
    of ``"system"``, ``"tools"``, ``"messages"``) adds a ``cachePoint`` after each.
    """

    family = "bedrock"

    def __init__(
        self,
        model_id: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        session: Any = None,
        credentials: Any = None,
        endpoint_url: str | None = None,
        max_tokens: int | None = None,
        cache_points: Iterable[str] = (),
        **settings: Unpack[VendorSettings],
    ) -> None:
        if not isinstance(model_id, str) or not _MODEL_ID.fullmatch(model_id):
            raise ValueError(
                f"BedrockConverse.model_id={model_id!r} must be a Bedrock model id, "
                "inference profile or ARN (e.g. 'us.anthropic.claude-sonnet-4-6')"
            )
        if settings.get("api_key") is not None:
            raise ValueError("BedrockConverse signs with AWS credentials: give no api_key")
        self.region = _region(region, profile)
        self.cache_points = tuple(cache_points)
        if not set(self.cache_points) <= CACHE_POINTS:
            raise ValueError(f"BedrockConverse.cache_points: each one of {sorted(CACHE_POINTS)}")
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
            raise ValueError(f"BedrockConverse.max_tokens={max_tokens!r} must be a positive int")
        self.max_tokens = max_tokens
        base = base_url_from_env(
            endpoint_url,
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"),
            f"https://bedrock-runtime.{self.region}.amazonaws.com",
            allow_insecure_http=bool(settings.get("allow_insecure_http")),
        )
        settings["name"] = settings.get("name") or f"bedrock:{model_id}@{self.region}"
        super().__init__(model_id, base_url=base, **settings)
        # ':' stays as is: aiohttp's URL class would decode %3A, and the signature must
        # cover the path as sent; '/' (in ARNs) is encoded.
        path = "/model/" + quote(model_id, safe=":")
        self._converse_url = join_url(self.base_url, path + "/converse")
        self._stream_url = join_url(self.base_url, path + "/converse-stream")
        self._signer = AwsSigner(
            self.region, provider=self.name, profile=profile, session=session,
            credentials=credentials,
        )  # fmt: skip

    @property
    def gen_ai_provider_name(self) -> str:
        return "aws.bedrock"

    def secrets(self) -> tuple[Secret, ...]:
        return super().secrets() + self._signer.secrets()

    def request_headers(self) -> dict[str, str]:
        return {"content-type": "application/json", **self._extra_headers}

    def _signed(self, url: str, body: bytes, accept: str) -> dict[str, str]:
        headers = self._signer.sign(url, body, {**self.request_headers(), "accept": accept})
        headers["accept-encoding"] = ACCEPT_ENCODING  # unsigned: transports may set it
        return headers

    async def post_reply(
        self, url: str, headers: Mapping[str, str], body: bytes, secrets: Secrets
    ) -> RawReply:
        """The signed POST (``headers`` are :meth:`request_headers`)."""
        signed = self._signed(url, body, "application/json")
        return await super().post_reply(url, signed, body, secrets)

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        return map_bedrock_error(status, headers, body, provider=self.name, key=self.secrets())

    def reply_usage(self, data: Any) -> Any:
        return usage_of(data)

    def _parse(self, data: Any, answer: str | None) -> Response:
        stop = data.get("stopReason") if isinstance(data, Mapping) else None
        if stop in GUARDRAIL_STOPS:
            raise GuardrailTriggered(f"refused (stopReason={stop})", provider=self.name)
        text, calls = read_reply(data, answer)
        return self.response(text, usage_of(data), None, stop, calls)

    async def complete(self, request: Request) -> Response:
        """One Converse call; every failure raised as an ``orchestrator.errors`` class."""
        await self._signer.refresh()
        payload, answer = converse_body(request, self.max_tokens, self.cache_points)
        data = await self.post_json(self._converse_url, payload)
        return self.parsed_reply(self._parse, data, answer)

    async def stream(self, request: Request) -> AsyncIterator[str | ToolCallDelta | Response]:
        """Yield text (for structured output, the answer's JSON) and tool-call deltas,
        :data:`~orchestrator.PROGRESS` for other events, then the Response once the
        stream ends after ``messageStop`` (``StreamInterrupted`` without it). An
        ``exception`` frame is raised as the same exception before the stream is."""
        await self._signer.refresh()
        payload, answer = converse_body(request, self.max_tokens, self.cache_points)
        state = ConverseStream(answer)
        batches = self._frames(self._stream_url, payload)
        try:
            async for batch in batches:
                for frame in batch:
                    if off_loop(frame.payload):
                        data = await self._event_off_loop(frame)
                    else:
                        data = self._event(frame)
                    item = self.parsed(state.read, frame.kind, data)
                    if state.stop in GUARDRAIL_STOPS:
                        raise GuardrailTriggered(
                            f"refused (stopReason={state.stop})", provider=self.name
                        )
                    yield item or PROGRESS
            yield self._final(state)
        except InvalidOutput as error:
            self.bill(error, state.usage)
            raise
        finally:  # now, not later by a task of the loop's (as an unclosed one would be)
            await batches.aclose()

    def _event(self, frame: Frame) -> Mapping[str, Any]:
        """An event frame's JSON object, parsed here (a frame :func:`off_loop` says no
        to); an exception or error frame raised as its class."""
        self._check_frame(frame)
        data = load_json(frame.payload, provider=self.name, what="stream event")
        return self._event_object(data)

    async def _event_off_loop(self, frame: Frame) -> Mapping[str, Any]:
        """:meth:`_event` for a frame :func:`off_loop` says yes to, parsed in a worker thread."""
        self._check_frame(frame)
        data = await load_json_async(frame.payload, provider=self.name, what="stream event")
        return self._event_object(data)

    def _check_frame(self, frame: Frame) -> None:
        """An exception or error frame raised as its class."""
        if frame.message_type != "event":
            body = error_body(frame.payload) or {"message": frame.error_message}
            raise map_bedrock_error(
                None, {}, body, provider=self.name, key=self.secrets(), etype=frame.kind
            )

    def _event_object(self, data: Any) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise InvalidOutput("stream event is not a JSON object", provider=self.name)
        return data

    def _final(self, state: ConverseStream) -> Response:
        if not state.ended:
            raise self.unfinished(state.parts, "messageStop")
        if state.answer is not None and not state.parts and not state.calls:
            raise self.empty_stream("tool input (structured output)")
        calls = self.parsed(state.calls.calls)
        return self.response("".join(state.parts), state.usage, None, state.stop, calls)

    def _frames(self, url: str, payload: Mapping[str, Any]) -> AsyncGenerator[list[Frame], None]:
        """POST ``payload`` signed and yield the reply's event-stream frames, those of each
        chunk in one list; every failure mapped (a body cut inside a frame:
        ``StreamInterrupted``)."""
        body = json.dumps(payload).encode()
        headers = trace_headers(self._signed(url, body, _EVENTS))

        def read(limit: int) -> FrameReader:
            return FrameReader(max_bytes=limit, provider=self.name)

        return self.post_stream(url, headers, body, read, self.map_error, self.secrets)
