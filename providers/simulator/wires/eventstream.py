"""AWS event-stream frames, written per the format botocore's decoder reads.

A frame is ``total length | headers length | CRC32 of those 8 bytes | headers |
payload | CRC32 of everything before it``, lengths big-endian; a header is ``name
length (1 byte) | name | type 7 (string) | value length (2 bytes) | value``.
botocore has a decoder but no encoder, so the simulator writes frames here and the
clients' decoder (botocore's, in boto3 and in ``BedrockConverse``) is the judge.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

from providers.simulator.wires.base import dumps

__all__ = ["EVENT_STREAM", "event", "exception", "frame", "grown"]

#: The Content-Type of an AWS event stream.
EVENT_STREAM = "application/vnd.amazon.eventstream"
_JSON = "application/json"


def _headers(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        out += struct.pack("!B", len(raw_name)) + raw_name
        out += struct.pack("!BH", 7, len(raw_value)) + raw_value
    return bytes(out)


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One frame with its two CRCs."""
    head = _headers(headers)
    prelude = struct.pack("!II", 12 + len(head) + len(payload) + 4, len(head))
    prelude += struct.pack("!I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + head + payload
    return message + struct.pack("!I", zlib.crc32(message) & 0xFFFFFFFF)


def event(kind: str, payload: Mapping[str, Any]) -> bytes:
    """An ``event`` frame of type ``kind`` carrying ``payload`` as JSON."""
    headers = {":event-type": kind, ":content-type": _JSON, ":message-type": "event"}
    return frame(headers, dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    """An ``exception`` frame (``:exception-type`` in lowerCamelCase, as Bedrock sends it)."""
    name = kind[:1].lower() + kind[1:]
    headers = {":exception-type": name, ":content-type": _JSON, ":message-type": "exception"}
    return frame(headers, dumps({"message": message}).encode())


def grown(frames: list[bytes], mark: bytes, size: int, piece: bytes) -> Iterator[bytes] | None:
    """``frames`` with ``mark`` in a payload replaced by ``size`` bytes of ``piece``
    repeated, its frame's lengths and CRCs made to match, written piece by piece (the
    whole frame is never held); None when no payload holds ``mark``."""
    for i, raw in enumerate(frames):
        head_length = struct.unpack_from("!I", raw, 4)[0]
        payload = raw[12 + head_length : -4]
        if mark in payload:
            return _grown(frames, i, raw[12 : 12 + head_length], payload, mark, size, piece)
    return None


def _grown(
    frames: list[bytes], i: int, head: bytes, payload: bytes, mark: bytes, size: int, piece: bytes
) -> Iterator[bytes]:
    yield b"".join(frames[:i])
    before, after = payload.split(mark, 1)
    total = 12 + len(head) + len(before) + size + len(after) + 4
    prelude = struct.pack("!II", total, len(head))
    prelude += struct.pack("!I", zlib.crc32(prelude) & 0xFFFFFFFF)
    crc = 0
    for data in _sized(prelude + head + before, size, piece, after):
        crc = zlib.crc32(data, crc)
        yield data
    yield struct.pack("!I", crc & 0xFFFFFFFF) + b"".join(frames[i + 1 :])


def _sized(head: bytes, size: int, piece: bytes, tail: bytes) -> Iterator[bytes]:
    yield head
    while size > 0:
        n = min(size, len(piece))
        yield piece if n == len(piece) else piece[:n]
        size -= n
    yield tail
