"""A cheaper constructor for the frozen, slotted dataclasses every call builds.

A frozen dataclass's generated ``__init__`` sets each field with
``object.__setattr__`` (the class's own ``__setattr__`` refuses), about 1,300
instructions a field on CPython 3.11; a ``Request``, its ``Message``, the
``Attempt``, the ``Result``, the ``Response`` and its ``Usage`` are 44 fields a
call. :func:`slot_init` gives such a class an ``__init__`` with the same
signature that sets each field through its slot's descriptor instead (half the
cost). The class stays frozen: assigning or deleting a field still raises
``FrozenInstanceError``; equality, hashing, ``replace`` and pickling are the
dataclass's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["slot_filler", "slot_init"]

T = TypeVar("T")


class _Factory:
    """The default shown for a field made by its ``default_factory`` (as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def slot_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of ``cls`` (a ``@dataclass(frozen=True, slots=True)``) with
    one that sets its slots directly: the same parameters, defaults and ``__post_init__``.

    Apply it above the ``@dataclass`` line. A field with ``init=False`` or ``kw_only`` is
    refused (``TypeError``): the generated ``__init__`` is kept for what this does not
    reproduce.
    """
    env, args, body = _setters(cls)
    env["_FACTORY"] = _FACTORY
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.kw_only:
            raise TypeError(f"slot_init: {cls.__name__}.{f.name} is init=False or kw_only")
        if f.default is not dataclasses.MISSING:
            env[f"_dflt_{f.name}"] = f.default
            args[args.index(f.name)] = f"{f.name}=_dflt_{f.name}"
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_make_{f.name}"] = f.default_factory
            args[args.index(f.name)] = f"{f.name}=_FACTORY"
            body.insert(0, f"if {f.name} is _FACTORY: {f.name} = _make_{f.name}()")
    if hasattr(cls, "__post_init__"):
        body.append("__slot_init_self__.__post_init__()")
    init = _compiled("__init__", args, body, env)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def slot_filler(cls: type[Any]) -> Callable[..., None]:
    """``fill(obj, *values)``: sets every field of ``obj`` (a ``cls``, a frozen, slotted
    dataclass), in field order, through the slots. For a hand-written ``__init__`` that
    validates and converts its arguments first."""
    env, args, body = _setters(cls)
    fill: Callable[..., None] = _compiled(f"fill_{cls.__name__}", args, body, env)
    return fill


def _setters(cls: type[Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    """Each field's slot setter, the parameter list and the lines setting each slot."""
    if "__slots__" not in cls.__dict__ or not cls.__dataclass_params__.frozen:
        raise TypeError(f"slot_init: {cls.__name__} is not a frozen, slotted dataclass")
    env: dict[str, Any] = {}
    args, body = ["__slot_init_self__"], []
    for f in dataclasses.fields(cls):
        env[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
        args.append(f.name)
        body.append(f"_set_{f.name}(__slot_init_self__, {f.name})")
    return env, args, body


def _compiled(name: str, args: list[str], body: list[str], env: dict[str, Any]) -> Any:
    source = f"def {name}({', '.join(args)}):\n" + "".join(f"    {line}\n" for line in body)
    exec(source, env)  # made above from field names only, as dataclasses makes its own
    return env[name]
