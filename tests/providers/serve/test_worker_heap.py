"""A gateway worker settles its heap before it accepts: what it loaded is frozen out of the
garbage collector's passes, and young objects are collected less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.serve import GatewayKeys, GatewaySettings, server
from tests.conftest import write_chain
from tests.providers.serve.processes import CHAIN


@pytest.fixture
def restored_gc() -> Iterator[None]:
    """This test process's collector as it was (a worker's settings are its own)."""
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_settling_freezes_what_is_alive_and_collects_young_objects_less_often(
    restored_gc: None,
) -> None:
    loaded = [["chain"]]  # what a worker loaded: alive when it settles
    server.settle_heap()
    assert not any(o is loaded for o in gc.get_objects())  # in no generation: frozen
    later = [["request"]]
    assert any(o is later for o in gc.get_objects())
    assert gc.get_threshold()[0] == server.GEN0_THRESHOLD > 700


async def test_a_worker_settles_its_heap_once_its_chain_is_loaded_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []

    async def serve(models: Any, *args: Any) -> None:
        steps.append(f"serve {models.names()}")

    monkeypatch.setattr(server, "settle_heap", lambda: steps.append("settle"))
    monkeypatch.setattr(server, "serve", serve)
    monkeypatch.setattr(server, "install_meter_provider", lambda: False)
    monkeypatch.setenv("SIM", "http://127.0.0.1:9")
    monkeypatch.setenv("K", "sk-test-0123456789")
    sock = server.listen_socket("127.0.0.1", 0, reuse_port=False)
    with sock:
        chain = str(write_chain(tmp_path, CHAIN))
        await server._main(chain, GatewayKeys(), GatewaySettings(), sock, None)
    assert steps == ["settle", "serve ['review']"]
