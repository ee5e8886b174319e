"""What a provider type gives the chain file: its spec (the validator) and how to build from it.

This is the public plug-in API. A provider type is a :class:`ProviderSpec`
subclass, registered under the ``failover.providers`` entry-point group with
its ``type`` name; the chain file's entry is validated with the spec (so
every error is located at the field it is about) and the provider is built
by the spec's :meth:`ProviderSpec.build`::

    # mycorp_provider.py, with in pyproject.toml:
    # [project.entry-points."failover.providers"]
    # mycorp = "mycorp_provider:MyCorpSpec"
    class MyCorpSpec(ProviderSpec):
        model: Name
        timeout: PositiveFloat | None = None

        def build(self, ctx: BuildContext) -> MyCorpProvider:
            return MyCorpProvider(self.model, name=ctx.name)

Numbers and booleans are strict (``timeout: "5"`` is an error) except values
that came from ``${VAR}`` expansion (:class:`EnvStr`): the environment only
holds strings, so ``timeout: ${TIMEOUT}`` with ``TIMEOUT=30`` is converted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic_core import PydanticCustomError

__all__ = [
    "POLICY_FIELDS",
    "BuildContext",
    "EnvStr",
    "Flag",
    "ImportPath",
    "Name",
    "NonNegativeFloat",
    "NonNegativeInt",
    "PolicySpec",
    "PositiveFloat",
    "PositiveInt",
    "Price",
    "ProviderSpec",
    "Spec",
    "given",
    "value_problem",
]


class EnvStr(str):
    """A string produced by ``${VAR}`` expansion (so it may be converted to a number).

    The environment only holds strings; the spec converts an ``EnvStr`` to
    the number or boolean a field needs, and nothing else.
    """

    __slots__ = ()


_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def _env_number(value: Any) -> Any:
    """A number written in the environment (``EnvStr``) becomes an int or a float."""
    if not isinstance(value, EnvStr):
        return value
    text = value.strip()
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return value


def _env_bool(value: Any) -> Any:
    """``true``/``false`` (yes/no, on/off, 1/0) from the environment become a bool."""
    if isinstance(value, EnvStr):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return value


ImportPath = Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")]
Name = Annotated[str, Field(min_length=1)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0), BeforeValidator(_env_number)]
PositiveInt = Annotated[int, Strict(), Field(gt=0), BeforeValidator(_env_number)]
# Finite, as orchestrator.units.seconds wants every time argument (None, not .inf, is "no limit").
NonNegativeFloat = Annotated[
    float, Strict(), Field(ge=0, allow_inf_nan=False), BeforeValidator(_env_number)
]
PositiveFloat = Annotated[
    float, Strict(), Field(gt=0, allow_inf_nan=False), BeforeValidator(_env_number)
]
Flag = Annotated[bool, Strict(), BeforeValidator(_env_bool)]
Price = tuple[NonNegativeFloat, NonNegativeFloat]

#: Chain-file policy keys (on agents, providers and references) and their RetryPolicy names.
POLICY_FIELDS = {
    "max_retries": "max_retries",
    "retry_strategy": "strategy",
    "retry_delay": "delay",
    "max_delay": "max_delay",
    "jitter": "jitter",
}


def value_problem(problem: str) -> PydanticCustomError:
    """Raise this from a field validator when the value is wrong: the chain file's
    error shows the value (or the ``${VAR}`` it came from, never a secret) and then
    ``problem`` ("is not an http(s) URL; give e.g. ...")."""
    return PydanticCustomError("value_problem", "{problem}", {"problem": problem})


def given(**kwargs: Any) -> dict[str, Any]:
    """The keyword arguments that are not None (the file left the others to the defaults)."""
    return {k: v for k, v in kwargs.items() if v is not None}


class Spec(BaseModel):
    """A chain-file mapping: unknown keys are errors; validated values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PolicySpec(Spec):
    """The retry-policy keys an agent, a provider or a reference may set."""

    max_retries: NonNegativeInt | None = None
    retry_strategy: Literal["exponential", "linear", "none"] | None = None
    retry_delay: NonNegativeFloat | None = None
    max_delay: NonNegativeFloat | None = None
    jitter: Literal["full"] | None = None

    def policy_overrides(self) -> dict[str, Any]:
        """The policy keys set here, under their RetryPolicy names."""
        return {
            POLICY_FIELDS[k]: getattr(self, k)
            for k in POLICY_FIELDS
            if getattr(self, k) is not None
        }


class LimitsSpec(Spec):
    """``limits: {rpm, tpm, max_concurrency}`` on a provider (:class:`orchestrator.Limits`)."""

    rpm: PositiveInt | None = None
    tpm: PositiveInt | None = None
    max_concurrency: PositiveInt | None = None


class BudgetSpec(Spec):
    """``budget: {usd, per}`` on an agent or a provider (:class:`orchestrator.Budget`)."""

    usd: PositiveFloat
    per: Literal["minute", "hour", "day", "month"] = "day"


class BuildContext(Protocol):
    """What building a provider may ask of the chain file."""

    @property
    def name(self) -> str:
        """The provider's name in the file (its ``providers:`` key)."""
        ...

    def hook(self, field: str, value: str) -> Callable[..., Any]:
        """The callable ``value`` (``"package.module:attr"``) names, imported from the
        chain file's directory, the working directory or the installed packages;
        a ``ConfigError`` located at ``field`` when it cannot be."""
        ...


class ProviderSpec(PolicySpec):
    """Base of every provider type's spec: the ``type`` key and the policy keys.

    Subclass it with the type's own fields (strict: the field types above) and
    :meth:`build`; raise :func:`value_problem` from a field validator for a rule
    pydantic's constraints cannot say.
    """

    #: Where the type appears when an error lists the types (lower first, then by name).
    order: ClassVar[int] = 1000
    #: The environment variable suggested when the file writes ``api_key`` literally.
    key_env: ClassVar[str | None] = None
    #: The field ``regions: [...]`` sets, one provider per value (None: the spec's
    #: ``region`` or ``location`` field, if it has one; else the type takes no ``regions``).
    region_field: ClassVar[str | None] = None

    type: str
    limits: LimitsSpec | None = None
    budget: BudgetSpec | None = None

    def build(self, ctx: BuildContext) -> Any:
        """The provider this validated entry describes (called once per entry)."""
        raise NotImplementedError(f"{type(self).__name__}.build")
