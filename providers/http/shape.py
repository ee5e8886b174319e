"""Reading a vendor's reply: the errors a reply of the wrong shape raises, token
counts, field paths and the checks on stream events and schema names.

Vendor modules read every reply field through these, so a reply of the wrong
shape is one of :data:`BAD_SHAPE`, which :class:`ReplyReader` (a part of
:class:`~providers.http.base.VendorProvider`) turns into ``InvalidOutput``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from orchestrator.errors import InvalidOutput
from orchestrator.secrets import Secret
from orchestrator.usage import Usage
from providers.http.catalogue import Rates
from providers.http.cost import bill
from providers.http.redact import redacted, short
from providers.http.safe_json import parse_json

__all__ = [
    "BAD_SHAPE",
    "JSON_OBJECT",
    "MAX_TOKENS",
    "Missing",
    "ReplyReader",
    "dig",
    "schema_name",
    "tokens",
    "whole_event",
]

P = ParamSpec("P")
T = TypeVar("T")


class Missing(Exception):
    """A field the wire format requires is absent (turned into ``InvalidOutput``)."""


BAD_SHAPE = (
    Missing,
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
)
"""What reading a reply of the wrong shape raises (``int("n/a")``, ``"str".get``,
``int(1e308 * 10)``...): providers catch these around parsing and raise
``InvalidOutput`` for them."""

JSON_OBJECT = (dict, Mapping)
"""What a JSON object is, for ``isinstance``: ``dict`` first, so a parsed document is
recognised at C speed (an ABC's isinstance costs a Python call, on every reply and
stream event); any other ``Mapping`` a Python caller gives still passes."""

MAX_TOKENS = 2**53
"""Token counts at or past this are not counts (and would lose precision as floats)."""


def tokens(value: Any) -> int:
    """A token count from a reply (``None``/absent is 0); ``ValueError`` unless it is a
    whole number in ``0..MAX_TOKENS``, so costs computed from it stay finite."""
    if type(value) is int and 0 <= value < MAX_TOKENS:
        return value  # what a reply holds: taken as is, the common case
    count = int(value or 0)
    if not 0 <= count < MAX_TOKENS:
        raise ValueError(f"token count {str(count)[:20]} is out of range")
    return count


def dig(data: Any, *path: str | int, what: str = "reply") -> Any:
    """``data[path[0]][path[1]]...``; raises :class:`Missing` naming the path when absent
    (or None); ``what`` names the document in the message ("reply", "stream event")."""
    node = data
    for i, step in enumerate(path):
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            node = None
        if node is None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[: i + 1])
            raise Missing(f"{what} has no {where.lstrip('.')}") from None
    return node


def whole_event(data: str) -> bool:
    """True when an event's data is complete: valid JSON or the ``[DONE]`` marker."""
    if data == "[DONE]":
        return True
    try:
        parse_json(data)
    except ValueError:
        return False
    return True


def schema_name(name: str | None) -> str:
    """A vendor-safe tool/schema name (``[a-zA-Z0-9_-]{1,64}``), default ``"response"``."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name or "")[:64]
    return cleaned or "response"


class ReplyReader:
    """Reading a whole reply for a provider: a reply of the wrong shape (one of
    :data:`BAD_SHAPE`) becomes ``InvalidOutput``, billed for the usage it reported.

    A mixin of :class:`~providers.http.base.VendorProvider`, which supplies ``name``,
    ``rates`` and ``secrets()``.
    """

    name: str
    rates: Rates | None

    def secrets(self) -> tuple[Secret, ...]:
        raise NotImplementedError

    def parsed(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``read(*args, **kwargs)``, a reply of the wrong shape (one of :data:`BAD_SHAPE`)
        raised as :meth:`invalid` describes it."""
        failure: InvalidOutput | None = None
        try:
            return read(*args, **kwargs)
        except BAD_SHAPE as exc:
            failure = self.invalid(exc)
        raise failure  # not in the except block, where exc would be the context

    def parsed_reply(
        self, read: Callable[Concatenate[Any, P], T], data: Any, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """:meth:`parsed` for a whole reply ``data``: its ``InvalidOutput`` carries the
        usage ``data`` reports (:meth:`reply_usage`, when readable) and its cost."""
        failure: InvalidOutput | None = None
        try:
            return read(data, *args, **kwargs)
        except BAD_SHAPE as exc:  # what parsed() makes of it (invalid(): the rule), one frame less
            failure = self.invalid(exc)
        except InvalidOutput as error:
            self.bill(error, self._readable_usage(data))
            raise
        self.bill(failure, self._readable_usage(data))
        raise failure  # not in the except block, where exc would be the context

    def reply_usage(self, data: Any) -> Usage | None:
        """The usage a whole reply reports, by the vendor's own parser (one of
        :data:`BAD_SHAPE` when malformed); None here: a vendor overrides it."""
        return None

    def _readable_usage(self, data: Any) -> Usage | None:
        try:
            return self.reply_usage(data)
        except BAD_SHAPE:
            return None  # the usage is malformed too: nothing to count

    def bill(self, error: InvalidOutput, usage: Usage | None) -> None:
        """:func:`bill` ``error`` for ``usage`` at this provider's rates."""
        bill(error, usage, self.rates)

    def invalid(self, exc: Exception) -> InvalidOutput:
        """``InvalidOutput`` for a reply missing a field or of the wrong shape (one of
        :data:`BAD_SHAPE`), ``exc`` described as its cause; raise it outside the
        ``except`` block (``exc`` may quote the reply: ``int('...')``)."""
        if isinstance(exc, Missing):  # may quote a name the reply gave: cut and masked
            return InvalidOutput(short(str(exc), self.secrets()), provider=self.name)
        err = InvalidOutput(
            f"reply has an unexpected shape ({type(exc).__name__}: "
            f"{short(str(exc), self.secrets())})",
            provider=self.name,
        )
        err.__cause__ = redacted(exc, self.secrets())
        return err
