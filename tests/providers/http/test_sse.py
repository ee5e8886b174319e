"""The SSE decoder: linear time, bounded lines and events, and any split gives the same events."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.http.sse import DEFAULT_MAX_SSE_BYTES, SSEDecoder, SSEEvent, SSELimitExceeded

MiB = 1024 * 1024
CHUNK = 64 * 1024


def _feed_line(decoder: SSEDecoder, size: int) -> None:
    """Feed one ``data:`` line of ``size`` bytes in 64 KiB chunks, without its end."""
    decoder.feed(b"data: ")
    piece = b"x" * CHUNK
    for _ in range(size // CHUNK):
        decoder.feed(piece)


def test_a_64_mib_line_is_refused_by_the_default_cap_in_linear_time() -> None:
    decoder = SSEDecoder()
    start = time.process_time()
    with pytest.raises(SSELimitExceeded) as info:
        _feed_line(decoder, 64 * MiB)
    cpu = time.process_time() - start
    # Linear work: about 0.05 s here; the old decoder re-copied its buffer per chunk
    # (34.5 s of CPU for this line). The bound is generous so load cannot flake it.
    assert cpu < 2.0, f"{cpu:.2f}s of CPU for a 64 MiB line"
    assert info.value.limit == DEFAULT_MAX_SSE_BYTES == 32 * MiB
    assert "line" in str(info.value)


def test_a_long_line_under_the_cap_is_read_in_linear_time() -> None:
    decoder = SSEDecoder()
    start = time.process_time()
    _feed_line(decoder, 24 * MiB)
    events = decoder.feed(b"\n\n")
    cpu = time.process_time() - start
    assert cpu < 1.0, f"{cpu:.2f}s of CPU for a 24 MiB line"
    assert [len(e.data) for e in events] == [24 * MiB]


def test_line_and_event_caps_are_settable_and_count_bytes() -> None:
    decoder = SSEDecoder(max_bytes=10)
    assert decoder.feed(b"data: 1234\n") == []  # a 10-byte line is allowed
    with pytest.raises(SSELimitExceeded, match="line"):
        decoder.feed(b"data: 12345\n")
    decoder = SSEDecoder(max_bytes=8)
    decoder.feed(b"data: 12\ndata: 34\ndata: 56\n")  # 2 + 1 + 2 + 1 + 2 = 8 bytes of data
    with pytest.raises(SSELimitExceeded, match="event"):
        decoder.feed(b"data: 78\n")


def test_many_small_lines_of_one_event_are_capped() -> None:
    decoder = SSEDecoder(max_bytes=1000)
    with pytest.raises(SSELimitExceeded, match="event"):
        for _ in range(1000):
            decoder.feed(b"data: 12345\n")


def test_comments_and_blank_lines_do_not_count_towards_an_event() -> None:
    decoder = SSEDecoder(max_bytes=20)
    for _ in range(1000):
        assert decoder.feed(b": keep-alive\n\n") == []
    assert decoder.feed(b"data: ok\n\n") == [SSEEvent("message", "ok")]


def test_a_multibyte_character_split_across_chunks_survives() -> None:
    raw = "data: héllo €\n\n".encode()
    decoder = SSEDecoder()
    events = [e for i in range(len(raw)) for e in decoder.feed(raw[i : i + 1])]
    assert events == [SSEEvent("message", "héllo €")]


def _events(chunks: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    out = [e for chunk in chunks for e in decoder.feed(chunk)]
    return out + decoder.close()


_FIELDS = [b"data:", b"data: ", b"event: ", b"event:x", b": c", b"id: 1", b"a", b"{}", b"\xc3\xa9"]
_ENDS = [b"\n", b"\r", b"\r\n", b"\n\n", b"\r\n\r\n", b"\xef\xbb\xbf", b"\xef", b" ", b":"]
_PIECES = st.sampled_from([*_FIELDS, *_ENDS])


@settings(max_examples=300, deadline=None)
@given(
    body=st.lists(_PIECES, max_size=40).map(b"".join),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_of_the_same_bytes_gives_the_same_events(body: bytes, cuts: list[int]) -> None:
    points = sorted({c for c in cuts if c <= len(body)})
    bounds = [0, *points, len(body)]
    chunks = [body[a:b] for a, b in itertools.pairwise(bounds)]
    assert _events(chunks) == _events([body])
    assert _events([body[i : i + 1] for i in range(len(body))]) == _events([body])
