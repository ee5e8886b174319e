"""AWS event-stream frames decoded by botocore through FrameReader: whole frames, however
the bytes arrive; a corrupt frame is InvalidOutput, a cut one StreamInterrupted, an
oversized one refused from its declared length, and a large frame in small chunks is
read in linear time (botocore's buffer alone copies itself on every chunk)."""

from __future__ import annotations

import json
import time

import pytest

from orchestrator import errors as E
from providers.bedrock.eventstream import FrameReader
from providers.http.body import BodyTooLarge
from providers.simulator.wires.eventstream import event, exception

MiB = 1024 * 1024


def reader(max_bytes: int = 32 * MiB) -> FrameReader:
    return FrameReader(max_bytes=max_bytes, provider="bedrock:test")


def test_frames_fed_byte_by_byte_come_out_whole() -> None:
    data = event("messageStart", {"role": "assistant"}) + exception("ThrottlingException", "slow")
    frames = reader()
    out = [f for i in range(len(data)) for f in frames.feed(data[i : i + 1])]
    frames.close()
    assert [(f.message_type, f.kind) for f in out] == [
        ("event", "messageStart"),
        ("exception", "throttlingException"),
    ]
    assert json.loads(out[1].payload) == {"message": "slow"}


@pytest.mark.parametrize("where", [5, 14, -10, -1])  # prelude CRC, headers, payload, message CRC
def test_a_flipped_byte_is_invalid_output(where: int) -> None:
    data = bytearray(event("contentBlockDelta", {"delta": {"text": "hi"}}))
    data[where] ^= 0x01
    with pytest.raises(E.InvalidOutput, match="corrupt event-stream frame"):
        reader().feed(bytes(data))


def test_a_corrupt_crc_names_no_payload() -> None:
    data = bytearray(event("contentBlockDelta", {"delta": {"text": "secret prompt text"}}))
    data[-1] ^= 0xFF
    with pytest.raises(E.InvalidOutput) as info:
        reader().feed(bytes(data))
    assert "secret prompt" not in str(info.value) and info.value.__context__ is None


def test_a_body_cut_inside_a_frame_is_stream_interrupted() -> None:
    data = event("messageStart", {"role": "assistant"})
    frames = reader()
    assert len(frames.feed(data + data[:20])) == 1
    with pytest.raises(E.StreamInterrupted, match="inside an event-stream frame"):
        frames.close()


def test_a_frame_longer_than_the_cap_is_refused_from_its_prelude() -> None:
    big = event("contentBlockDelta", {"delta": {"text": "x" * 5000}})
    with pytest.raises(BodyTooLarge):
        reader(max_bytes=4096).feed(big[:12])  # the declared length is enough


def test_a_large_frame_in_small_chunks_is_linear() -> None:
    data = event("contentBlockDelta", {"delta": {"text": "x" * (16 * MiB)}})
    frames = reader()
    start = time.perf_counter()
    out = [f for i in range(0, len(data), 4096) for f in frames.feed(data[i : i + 4096])]
    elapsed = time.perf_counter() - start
    assert len(out) == 1 and len(out[0].payload) > 16 * MiB
    assert elapsed < 2.0, f"{elapsed:.2f}s for 4096 chunks of one 16 MiB frame"
