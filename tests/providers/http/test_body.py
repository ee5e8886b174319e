"""providers.http.body: decoding, counting and capping a reply body in bounded slices."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator

import pytest

from orchestrator import errors as E
from providers.http.body import (
    SLICE,
    BodyTooLarge,
    BodyUndecodable,
    bounded_chunks,
    check_max_bytes,
    read_bounded,
)
from providers.simulator import Fault

MiB = 1024 * 1024


async def _raw(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate-zlib", "deflate-raw", None])
async def test_each_encoding_decodes_whatever_the_chunking(encoding: str | None) -> None:
    plain = b"hello world " * 50_000
    if encoding in ("gzip", "x-gzip"):
        wire = gzip.compress(plain)
    elif encoding == "deflate-zlib":
        wire = zlib.compress(plain)
    elif encoding == "deflate-raw":
        squeeze = zlib.compressobj(6, zlib.DEFLATED, -15)
        wire = squeeze.compress(plain) + squeeze.flush()
    else:
        wire = plain
    header = encoding.removesuffix("-zlib").removesuffix("-raw") if encoding else None
    for size in (1, 7, 4096, len(wire)):
        chunks = _split(wire, size) if size > 1 else _split(wire, 997)
        assert await read_bounded(_raw(*chunks), header, 10 * MiB) == plain


async def test_concatenated_gzip_members_are_one_body() -> None:
    wire = gzip.compress(b"first ") + gzip.compress(b"second")
    assert await read_bounded(_raw(wire), "gzip", MiB) == b"first second"


async def test_a_bomb_is_inflated_in_slices_with_loop_turns_between() -> None:
    wire = gzip.compress(b"\0" * (64 * MiB))  # about 64 KB
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    sizes = [len(piece) async for piece in bounded_chunks(_raw(wire), "gzip", 128 * MiB)]
    task.cancel()
    assert max(sizes) <= SLICE and sum(sizes) == 64 * MiB
    assert ticks >= len(sizes) - 1  # the loop ran between every two slices


async def test_the_cap_counts_decoded_bytes_and_stops_early() -> None:
    wire = gzip.compress(b"\0" * (256 * MiB))
    seen = 0
    with pytest.raises(BodyTooLarge) as info:
        async for piece in bounded_chunks(_raw(wire), "gzip", MiB):
            seen += len(piece)
    assert seen <= MiB and info.value.limit == MiB
    with pytest.raises(BodyTooLarge):
        await read_bounded(_raw(b"x" * 600, b"x" * 600), None, 1000)  # raw bytes too
    error = info.value.taxonomy("p")
    assert type(error) is E.ResponseTooLarge and error.provider == "p"
    assert "max_response_bytes=1048576" in str(error)


@pytest.mark.parametrize(
    ("encoding", "wire"), [("br", b"\x0b\x02\x80hi\x03"), ("gzip", b"\x1f\x8b not gzip")]
)
async def test_unknown_or_corrupt_encodings_are_undecodable(encoding: str, wire: bytes) -> None:
    with pytest.raises(BodyUndecodable):
        await read_bounded(_raw(wire), encoding, MiB)


async def test_a_deadline_bounds_every_read() -> None:
    async def drip() -> AsyncIterator[bytes]:
        while True:
            await asyncio.sleep(0.01)
            yield b" "

    deadline = asyncio.get_running_loop().time() + 0.1
    with pytest.raises(TimeoutError):
        await read_bounded(drip(), None, MiB, deadline)


def test_check_max_bytes() -> None:
    assert check_max_bytes(1, field="f") == 1
    for bad in (0, -5, 2.0, True, None):
        with pytest.raises(ValueError, match=r"^f=.* must be a whole number of bytes >= 1"):
            check_max_bytes(bad, field="f")  # type: ignore[arg-type]


def test_hostile_faults_validate_and_load_from_specs() -> None:
    assert Fault.from_spec({"oversized": 100, "gzip": True}) == Fault.oversized(100, gzip=True)
    assert Fault.from_spec({"endless": 0.5, "keepalive": True}) == Fault.endless(
        0.5, keepalive=True
    )
    with pytest.raises(ValueError, match="size=0"):
        Fault.oversized(0)
    with pytest.raises(ValueError, match="interval=-1"):
        Fault.endless(-1)
