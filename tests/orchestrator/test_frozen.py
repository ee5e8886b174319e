"""slot_init: a frozen dataclass's cheaper constructor keeps everything a dataclass gives
(issue 22: six of them are built per call, each field through ``object.__setattr__``)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from orchestrator import Attempt, Message, Request, Response, Result, Usage
from orchestrator.frozen import slot_filler, slot_init


def _counted(quick: bool) -> type:
    """The same frozen dataclass, with its generated ``__init__`` or with slot_init's."""

    @dataclass(frozen=True, slots=True)
    class Counted:
        name: str
        count: int = 0
        tags: list[str] = field(default_factory=list)
        seen: list[str] = field(default_factory=list, compare=False)

        def __post_init__(self) -> None:
            if self.count < 0:
                raise ValueError("count: must be >= 0")
            self.seen.append("post_init")

    return slot_init(Counted) if quick else Counted


Plain, Quick = _counted(False), _counted(True)


def test_the_signature_defaults_and_post_init_are_the_dataclass_ones() -> None:
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    q = Quick("a")
    assert (q.name, q.count, q.tags, q.seen) == ("a", 0, [], ["post_init"])
    assert Quick("a").tags is not q.tags  # a default_factory makes a new one each time
    assert Quick(name="b", count=2, tags=["x"]).tags == ["x"]
    with pytest.raises(ValueError, match="count"):
        Quick("a", -1)
    with pytest.raises(TypeError):
        Quick()
    with pytest.raises(TypeError):
        Quick("a", 1, [], [], "extra")


def test_it_stays_frozen_and_a_dataclass() -> None:
    q = Quick("a", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.name = "b"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del q.name
    assert q == Quick("a", 1) and q != Quick("a", 2)
    assert dataclasses.replace(q, count=5).count == 5
    assert copy.deepcopy(q) == q
    assert [f.name for f in dataclasses.fields(q)] == ["name", "count", "tags", "seen"]


def test_what_it_cannot_reproduce_is_refused() -> None:
    with pytest.raises(TypeError, match="frozen, slotted"):
        slot_init(dataclass(frozen=True)(type("NoSlots", (), {"__annotations__": {"a": "int"}})))
    with pytest.raises(TypeError, match="frozen, slotted"):
        slot_filler(dataclass(slots=True)(type("Loose", (), {"__annotations__": {"a": "int"}})))
    kw: type = dataclass(frozen=True, slots=True, kw_only=True)(
        type("Kw", (), {"__annotations__": {"a": "int"}})
    )
    with pytest.raises(TypeError, match="kw_only"):
        slot_init(kw)


@pytest.mark.parametrize("cls", [Request, Message, Attempt, Result, Response, Usage])
def test_the_values_every_call_builds_set_their_slots_directly(cls: type[object]) -> None:
    # main: object.__setattr__ for each field (1,300 instructions a field; half that now)
    init = cls.__dict__["__init__"]
    assert "__setattr__" not in init.__code__.co_names


def test_the_values_keep_their_behaviour() -> None:
    attempt = Attempt("a", None, 1, 2.0, 0.5, usage=Usage(3, 4))
    result = Result("hi", "a", (attempt,), 0.5, order=("a",))
    assert result.usage == Usage(3, 4) and result.attempts[0].ok and result.value is None
    assert hash(attempt) == hash(Attempt("a", None, 1, 2.0, 0.5, usage=Usage(3, 4)))
    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(dataclasses.FrozenInstanceError):
        attempt.note = "x"  # type: ignore[misc]
    with pytest.raises(ValueError, match="robot"):
        Message("robot", "x")
    request = Request("ping", system="s", max_tokens=3, metadata={"k": 1})
    assert (request.prompt, request.system, request.max_tokens) == ("ping", "s", 3)
    assert dict(request.metadata) == {"k": 1} and pickle.loads(pickle.dumps(request)) == request


def test_a_request_of_a_prompt_builds_no_metadata_and_converts_no_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import orchestrator.messages as messages_module
    import orchestrator.types as types_module

    converted: list[object] = []
    real = messages_module.to_messages

    def counted(messages: Any) -> tuple[Message, ...]:
        converted.append(messages)
        return real(messages)

    monkeypatch.setattr(types_module, "to_messages", counted)
    first, second = Request("ping"), Request("pong", metadata={})
    # main: each built its own empty dict and view, and converted an empty messages list
    assert first.metadata is second.metadata and dict(first.metadata) == {}
    assert converted == []
    with pytest.raises(TypeError):
        first.metadata["k"] = 1  # type: ignore[index]
    given = {"k": 1}
    assert Request("x", metadata=given).metadata is not Request("x", metadata=given).metadata
    assert len(Request(messages=[{"role": "user", "content": "hi"}]).messages) == 1
    assert converted and Request("x", messages=[]).prompt == "x"
