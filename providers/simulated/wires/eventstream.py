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
from collections.abc import Mapping
from typing import Any

from providers.simulated.wires.base import dumps

__all__ = ["event", "exception", "frame"]

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
