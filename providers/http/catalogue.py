"""Prices and context windows of known models, from ``genai-prices``' bundled snapshot.

A provider looks its model up once, at construction (:func:`lookup`); the hot
path only multiplies (:meth:`Rates.cost`). The snapshot is the one shipped in
the installed ``genai-prices`` wheel: this module builds its own catalogue from
``genai_prices.data`` and never calls the package's updater, so no lookup can
reach the network (upgrade the package to refresh the prices).

Matching is strict, so an unknown model gets no cost rather than a wrong one:

- the vendor is the provider's (``openai``, ``anthropic``, ``google``, ``azure``;
  Vertex AI is ``google``):
  never a fuzzy guess across vendors; a platform's entry (Azure, Google's) is followed by
  the vendors the catalogue itself says it serves (its ``fallback_model_providers``);
- automatically only on the vendor's own API (the catalogue's URL pattern for
  it); a custom ``base_url`` serving "gpt-4o" (a proxy, a gateway, a local
  server) is looked up only with ``catalogue=True``;
- the model name must be a catalogue model's id or one of its listed names,
  optionally followed by a date (``-2024-08-06``, ``-20250929``, ``@20250929``):
  ``claude-sonnet-4-5-20250929`` is ``claude-sonnet-4-5``, but
  ``gpt-4o-custom`` is not ``gpt-4o``.

Costs count our :class:`~orchestrator.types.Usage`'s kinds of tokens: input at
the uncached input rate, the input read from or written to the prompt cache at the
model's cache-read and cache-write rates (at the input rate where the catalogue has
none), and output (reasoning included, as vendors bill it), with long-context tiers
chosen by the input tokens as the catalogue defines them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar
from urllib.parse import urlsplit

from orchestrator.types import Usage

__all__ = [
    "VENDORS",
    "CatalogueEntry",
    "ModelFacts",
    "Rates",
    "FamilyPriced",
    "check_window",
    "dearest_price",
    "lookup",
    "model_facts",
    "official",
    "vendor_rates",
]

#: Our provider families' vendors in the catalogue.
VENDORS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "google": "google",
    "azure": "azure",
    "bedrock": "aws",
    "vertex": "google",  # Vertex AI: Google's entry, which also lists Anthropic's models
}

# A date, or Bedrock's version suffix (``-v1:0``), after a listed name.
_DATE = re.compile(r"(?:[-@]20\d{2}-?\d{2}-?\d{2}|-latest|-v\d+(?::\d+)?)$")
_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str], CatalogueEntry | None] = {}
_DEAREST: dict[str, tuple[float, float] | None] = {}  # family -> its dearest rates
_PLATFORMS = frozenset({"azure", "vertex"})  # families serving other vendors' models
#: A family whose vendor's listing also holds others' models (Google's lists Vertex's
#: Claude): the prefixes of its own.
_OWN_MODELS = {"gemini": ("gemini", "gemma"), "google": ("gemini", "gemma")}

Tiers = tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million input and output tokens, and input tokens read from and written to
    the prompt cache (None: billed as input); ``*_tiers`` are ``(above_input_tokens,
    rate)`` pairs, ascending: a call whose input tokens exceed a tier's threshold pays
    that tier's rate for all its tokens of that kind."""

    input: float
    output: float
    input_tiers: Tiers = ()
    output_tiers: Tiers = ()
    cache_read: float | None = None
    cache_read_tiers: Tiers = ()
    cache_write: float | None = None
    cache_write_tiers: Tiers = ()

    def cost(self, usage: Usage) -> float:
        """USD for ``usage`` at these rates."""
        tokens_in = usage.input_tokens
        rate_in = _tiered(self.input, self.input_tiers, tokens_in)
        rate_read = _tiered(self.cache_read, self.cache_read_tiers, tokens_in, rate_in)
        rate_write = _tiered(self.cache_write, self.cache_write_tiers, tokens_in, rate_in)
        rate_out = _tiered(self.output, self.output_tiers, tokens_in)
        return (
            usage.uncached_input_tokens * rate_in
            + usage.cache_read_tokens * rate_read
            + usage.cache_write_tokens * rate_write
            + usage.output_tokens * rate_out
        ) / 1_000_000


def _tiered(base: float | None, tiers: Tiers, input_tokens: int, unknown: float = 0.0) -> float:
    """The rate for a call of ``input_tokens``: the last tier it passes, else ``base``
    (``unknown`` when there is no base: a cache rate the catalogue lacks)."""
    if base is None:
        return unknown
    rate = base
    for start, tier_rate in tiers:
        if input_tokens > start:
            rate = tier_rate
    return rate


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """What the catalogue knows of one model: its id, context window (tokens, or None)
    and rates (None when it is not priced per input and output token)."""

    model_id: str
    context_window: int | None
    rates: Rates | None


def official(vendor: str, base_url: str) -> bool:
    """Whether ``base_url`` is ``vendor``'s own API (the catalogue's URL pattern for it,
    ending at the host: ``https://api.openai.com.example`` is not OpenAI)."""
    if not base_url.startswith("https://"):
        return False  # every vendor API is https: a plain-http server skips the import
    provider = _provider(vendor)
    parts = urlsplit(base_url)
    origin = f"{parts.scheme}://{parts.hostname or ''}"  # the pattern must match the host whole
    found = None if provider is None else re.match(provider.api_pattern, origin)
    return found is not None and found.end() == len(origin)


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """A provider's price and context window: given, else from the catalogue, else None.

    ``price`` is ``(usd_per_1M_input, usd_per_1M_output)`` (the base rates of
    ``rates``); ``rates`` is what costs are computed with.
    """

    price: tuple[float, float] | None
    rates: Rates | None
    context_window: int | None


def model_facts(
    family: str,
    model: str,
    base_url: str,
    *,
    price: tuple[float, float] | None,
    context_window: int | None,
    catalogue: bool | None,
    owner: str,
) -> ModelFacts:
    """What a provider of ``family`` serving ``model`` at ``base_url`` costs and holds.

    ``price`` and ``context_window`` (already validated prices; the window is
    checked here) win over the catalogue; ``catalogue`` None looks the model up
    only on the vendor's own API, True wherever it is served, False never.
    """
    window = check_window(context_window, field=f"{owner}.context_window")
    if catalogue is not None and not isinstance(catalogue, bool):
        raise TypeError(f"{owner}.catalogue: expected True, False or None, got {catalogue!r}")
    entry = None
    vendor = VENDORS.get(family, "")
    wanted = (price is None or window is None) and vendor and catalogue is not False
    if wanted and (catalogue or official(vendor, base_url)):
        entry = lookup(vendor, model)
    if price is not None:
        rates: Rates | None = Rates(*price)
    else:
        rates = entry.rates if entry is not None else None
        price = (rates.input, rates.output) if rates is not None else None
    if window is None and entry is not None:
        window = entry.context_window
    return ModelFacts(price, rates, window)


def vendor_rates(family: str, model: str | None, base_url: str | None) -> Rates | None:
    """The catalogue's rates for ``model`` served by ``family``'s own API (``base_url``
    None: the tool's default, the vendor's): for agents that name their model but set
    no price (the coding-agent CLIs)."""
    vendor = VENDORS.get(family)
    if not model or vendor is None or (base_url is not None and not official(vendor, base_url)):
        return None
    entry = lookup(vendor, model)
    return entry.rates if entry is not None else None


def dearest_price(family: str) -> tuple[float, float] | None:
    """The dearest known (USD per 1M input, per 1M output) of ``family``'s vendor in the
    catalogue, each the highest rate or tier any of its models bills (the vendors it
    serves, for a platform): what a budget counts a reply with no price at. Cached."""
    vendor = VENDORS.get(family)
    if vendor is None:
        return None
    with _LOCK:
        if family in _DEAREST:
            return _DEAREST[family]
    provider = _provider(vendor)
    served = [provider] if provider is not None else []
    if family in _PLATFORMS:  # it serves other vendors' models too: theirs count
        served += [_provider(o) for o in getattr(provider, "fallback_model_providers", ()) or ()]
    only = _OWN_MODELS.get(family, ("",))
    models = [m for p in served if p is not None for m in p.models if m.id.startswith(only)]
    rates = [r for r in map(_rates, models) if r is not None]
    found = None
    if rates:
        found = (
            max(max([r.input, *(t for _, t in r.input_tiers)]) for r in rates),
            max(max([r.output, *(t for _, t in r.output_tiers)]) for r in rates),
        )
    with _LOCK:
        _DEAREST[family] = found
    return found


class FamilyPriced:
    """Mixin for a provider with a ``family``: ``dearest_price``, read by the engine's
    budgets (``budget_unpriced="dearest"``) when the provider has no ``price``."""

    family: ClassVar[str]

    @property
    def dearest_price(self) -> tuple[float, float] | None:
        """The dearest known price of this provider's family (:func:`dearest_price`)."""
        return dearest_price(self.family)


def check_window(value: int | None, *, field: str) -> int | None:
    """A context window in tokens: a positive int, or None (unknown)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field}={value!r} must be a positive number of tokens")
    return value


def lookup(vendor: str, model: str) -> CatalogueEntry | None:
    """``model`` of ``vendor`` in the bundled catalogue, or None when it is not listed
    under that name (see the module's docstring for the matching rule). Cached."""
    key = (vendor, model)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    entry = _find(vendor, model)
    with _LOCK:
        _CACHE[key] = entry
    return entry


def _find(vendor: str, model: str) -> CatalogueEntry | None:
    provider = _provider(vendor)
    if provider is None:
        return None
    ref = model.lower()
    found = _listed(provider, ref)
    # A platform serving other vendors' models (Azure: OpenAI's) names those vendors in
    # its entry: their own listings, by the same strict rule, one level deep.
    for other in getattr(provider, "fallback_model_providers", None) or ():
        if found is None and other != vendor:
            found = _listed(_provider(other), ref)
    return found


def _listed(provider: Any, ref: str) -> CatalogueEntry | None:
    """``ref`` among ``provider``'s own models: one the catalogue matches *and* that lists
    the name (its prefix rules alone are fuzzy)."""
    for info in provider.models if provider is not None else ():
        if info.is_match(ref) and _named(info, ref):
            return CatalogueEntry(info.id, info.context_window, _rates(info))
    return None


def _named(info: Any, ref: str) -> bool:
    """Whether ``ref`` (or ``ref`` less a date suffix) is the model's id or a listed name."""
    names = {info.id.lower(), *_names(info.match)}
    return ref in names or _DATE.sub("", ref) in names


def _names(clause: Any) -> set[str]:
    """The literal names a match clause lists (equals, starts-with and contains strings,
    through ``or``); an ``and`` clause narrows a name down, so its names are not taken."""
    out: set[str] = set()
    stack = [clause]
    while stack:
        node = stack.pop()
        for attr in ("equals", "starts_with", "contains"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                out.add(value.lower())
        stack.extend(getattr(node, "or_", None) or ())
    return out


def _rates(info: Any) -> Rates | None:
    """The model's input/output rates in force today, or None when it has no token rates."""
    try:
        price = info.get_prices(datetime.now(tz=UTC))
    except (LookupError, ValueError, TypeError):
        return None
    input_rate, input_tiers = _rate(getattr(price, "input_mtok", None))
    output_rate, output_tiers = _rate(getattr(price, "output_mtok", None))
    if input_rate is None or output_rate is None:
        return None
    read = _rate(getattr(price, "cache_read_mtok", None))
    write = _rate(getattr(price, "cache_write_mtok", None))
    return Rates(input_rate, output_rate, input_tiers, output_tiers, *read, *write)


def _rate(value: Any) -> tuple[float | None, Tiers]:
    if isinstance(value, Decimal):
        return float(value), ()
    base = getattr(value, "base", None)
    tiers = getattr(value, "tiers", None)
    if not isinstance(base, Decimal) or not isinstance(tiers, list):
        return None, ()
    return float(base), tuple((int(t.start), float(t.price)) for t in tiers)


def _provider(vendor: str) -> Any:
    """The catalogue's entry for ``vendor`` (imports the snapshot on first use: ~0.1 s)."""
    providers = _snapshot()
    return next((p for p in providers if p.id == vendor), None)


_SNAPSHOT: list[Any] = []


def _snapshot() -> list[Any]:
    """The bundled snapshot's providers. ``genai_prices.data`` is plain data: importing it
    starts no updater (that is ``genai_prices.UpdatePrices``, never used here)."""
    if not _SNAPSHOT:
        from genai_prices.data import providers

        with _LOCK:
            if not _SNAPSHOT:
                _SNAPSHOT.extend(providers)
    return _SNAPSHOT
