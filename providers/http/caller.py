"""The one POST every HTTP provider sends, its failures below HTTP mapped once.

:class:`HTTPCaller` is what :class:`~providers.http.base.VendorProvider` and
:class:`~providers.generic_http.HTTPFallback` share: the transport to use, a
library's exception turned into the taxonomy error (described, never chained,
no secret in any message), and a non-2xx reply's body read for the error map.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Protocol, TypeVar

from orchestrator.errors import ProviderError, UnusableError
from orchestrator.secrets import Secret
from orchestrator.telemetry import trace_headers
from providers.http.body import BodyTooLarge
from providers.http.client import ClientHolder, RawReply, TransportError, shared_client
from providers.http.errors import map_transport_error, not_found_at, redacted, short
from providers.http.safe_json import parse_json

__all__ = ["Decoder", "HTTPCaller", "error_body"]

Secrets = Callable[[], tuple[Secret, ...]]
T = TypeVar("T")


class Decoder(Protocol[T]):
    """Turns a streamed body into items as its chunks arrive (an SSE or event-stream
    decoder): :meth:`feed` each chunk, :meth:`close` at the body's end."""

    def feed(self, chunk: bytes) -> list[T]:
        """The items ``chunk`` completes."""
        ...

    def close(self) -> list[T]:
        """The items the body ended with (or the error for one it ended inside)."""
        ...


#: A new :class:`Decoder` for a 2xx reply's body, given the reply's ``max_bytes``.
Read = Callable[[int], Decoder[T]]
#: The taxonomy error of a non-2xx reply: ``(status, headers, parsed body)``.
Refused = Callable[[int, Mapping[str, str], Any], ProviderError]


def error_body(body: bytes) -> Any:
    """A non-2xx reply's JSON body for the error map (None when it is not JSON)."""
    try:
        return parse_json(body)
    except ValueError:
        return None


class HTTPCaller(ClientHolder):
    """A :class:`ClientHolder` that POSTs as ``name``, within ``timeout`` seconds, reading
    at most ``max_response_bytes`` (attributes the subclass sets)."""

    name: str
    timeout: float
    max_response_bytes: int

    def transport_failure(
        self, exc: TransportError, secrets: tuple[Secret, ...], *, streaming: bool = False
    ) -> ProviderError:
        """The taxonomy error for ``exc``, the library's exception described as its cause
        (:func:`redacted`); raise it outside the ``except`` block."""
        detail = short(str(exc), secrets)
        if exc.refused:
            err: ProviderError = UnusableError(detail, provider=self.name)
        else:
            err = map_transport_error(
                exc.timed_out,
                detail,
                provider=self.name,
                timeout=self.timeout,
                streaming=streaming and exc.after_headers,
            )
        err.__cause__ = redacted(exc.__cause__ or exc, secrets)
        return err

    async def post_reply(
        self, url: str, headers: Mapping[str, str], body: bytes, secrets: Secrets
    ) -> RawReply:
        """POST ``body`` and return the whole reply, of any status; a failure below HTTP
        raised as its taxonomy error, masking ``secrets()``."""
        transport = self._transport or shared_client(self._kind)
        failure: ProviderError | None = None
        try:
            return await transport.post(
                url, trace_headers(headers), body, self.timeout, max_bytes=self.max_response_bytes
            )
        except BodyTooLarge as exc:
            raise exc.taxonomy(self.name) from exc
        except TransportError as exc:
            failure = self.transport_failure(exc, secrets())
        raise failure  # not in the except block, where the library's error is the context

    async def post_stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        read: Read[T],
        refused: Refused,
        secrets: Secrets,
    ) -> AsyncGenerator[list[T], None]:
        """POST ``body`` and yield what the decoder ``read`` makes of the 2xx reply's
        body, as it arrives: the items of each chunk together, in one list (a reply's
        events mostly come in one or two chunks: one resume each, not one per event).

        A non-2xx reply is raised as ``refused`` maps it (a 404 naming the URL); a
        failure below HTTP as its taxonomy class (``StreamInterrupted`` once the
        reply started), masking ``secrets()``; the size cap as ``ResponseTooLarge``.
        ``timeout`` bounds the whole stream (``ProviderTimeout``).
        """
        transport = self._transport or shared_client(self._kind)
        limit = self.max_response_bytes
        failure: ProviderError | None = None
        try:
            async with transport.stream(url, headers, body, self.timeout, max_bytes=limit) as reply:
                if not 200 <= reply.status < 300:
                    raw = await reply.read()
                    raise not_found_at(refused(reply.status, reply.headers, error_body(raw)), url)
                decoder = read(limit)
                chunks = reply.chunks()
                try:
                    async for chunk in chunks:
                        if items := decoder.feed(chunk):
                            yield items
                finally:  # now, not later by a task of the loop's (as an unclosed one would be)
                    await chunks.aclose()  # type: ignore[attr-defined]
                if items := decoder.close():
                    yield items
        except BodyTooLarge as exc:
            raise exc.taxonomy(self.name) from exc
        except TransportError as exc:
            failure = self.transport_failure(exc, secrets(), streaming=True)
        if failure is not None:
            raise failure  # not in the except block, where the library's error is the context
