"""The gateway's fast OpenAI parse (a body with no option the gateway reads) agrees with the
full one: the same fields, the same defaults."""

from __future__ import annotations

from typing import Any

from providers.serve.openai_wire import _OPTIONS, OpenAIWire

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class _Reads(dict[str, Any]):
    """A body that records the fields read from it."""

    read: set[str]

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


def test_the_options_a_body_skips_are_every_one_parse_reads_and_default_alike() -> None:
    # The fast path's list must name every field the full parse reads (or a body with only
    # an unlisted one would skip its check), and each absent option's default be the fast
    # path's: a body with any one of them null parses as a body without it.
    wire = OpenAIWire()
    body = _Reads({**REQUEST, "n": None})
    body.read = set()
    wire.parse(body)
    assert body.read - {"model", "messages"} <= _OPTIONS
    for name in sorted(_OPTIONS):
        assert wire.parse({**REQUEST, name: None}) == wire.parse(REQUEST), name
