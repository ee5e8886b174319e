"""Prices and context windows from the bundled catalogue: strict names, no network."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestrator import Usage
from orchestrator.config import ConfigError, load_config
from providers import AnthropicMessages, GeminiGenerate, OpenAIChat
from providers.http.catalogue import Rates, lookup, official

LOOPBACK = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("vendor", "model", "model_id"),
    [
        ("openai", "gpt-4o-mini", "gpt-4o-mini"),
        ("openai", "gpt-4o-2024-08-06", "gpt-4o"),  # a listed name
        ("openai", "GPT-4o", "gpt-4o"),
        ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),  # date suffix
        ("anthropic", "claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("google", "gemini-2.5-flash", "gemini-2.5-flash"),
    ],
)
def test_known_names_are_found(vendor: str, model: str, model_id: str) -> None:
    entry = lookup(vendor, model)
    assert entry is not None and entry.model_id == model_id
    assert entry.rates is not None and entry.context_window


@pytest.mark.parametrize(
    ("vendor", "model"),
    [
        ("openai", "gpt-4o-custom"),  # the catalogue's prefix rules would take it: we do not
        ("openai", "gpt-5-nano-finetuned"),
        ("anthropic", "claude-sonnet-4-5-mine"),
        ("openai", "claude-sonnet-4-5"),  # another vendor's model
        ("openai", "llama-3.1-8b"),
        ("nobody", "gpt-4o"),
    ],
)
def test_unknown_or_fuzzy_names_are_not_priced(vendor: str, model: str) -> None:
    assert lookup(vendor, model) is None


def test_a_dated_snapshot_keeps_its_own_price() -> None:
    dated, current = lookup("openai", "gpt-4o-2024-05-13"), lookup("openai", "gpt-4o")
    assert dated is not None and current is not None and dated.rates != current.rates


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.openai.com/v1", True),
        ("https://api.openai.com", True),
        ("https://api.openai.com.attacker.example/v1", False),
        ("https://my-gateway.example/v1", False),
        (LOOPBACK, False),
    ],
)
def test_official_endpoints(url: str, expected: bool) -> None:
    assert official("openai", url) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://generativelanguage.googleapis.com", True),
        ("https://europe-west1-aiplatform.googleapis.com/v1", True),
        ("https://evil.example/x.googleapis.com", False),
        ("https://googleapis.com.evil.example", False),
    ],
)
def test_the_vendor_pattern_must_match_the_whole_host(url: str, expected: bool) -> None:
    assert official("google", url) is expected


def test_known_models_get_price_and_window_without_being_told() -> None:
    gpt = OpenAIChat("gpt-4o-mini")
    assert gpt.price == (0.15, 0.6) and gpt.context_window == 128_000
    claude = AnthropicMessages("claude-sonnet-4-5-20250929")
    assert claude.price == (3.0, 15.0) and claude.context_window == 200_000
    gemini = GeminiGenerate("models/gemini-2.5-flash")
    assert gemini.price is not None and gemini.context_window == 1_048_576
    assert not gemini.window_counts_output and claude.window_counts_output


def test_a_custom_endpoint_is_looked_up_only_when_asked() -> None:
    assert OpenAIChat("gpt-4o", base_url=LOOPBACK).price is None
    assert OpenAIChat("gpt-4o", base_url=LOOPBACK).context_window is None
    asked = OpenAIChat("gpt-4o", base_url=LOOPBACK, catalogue=True)
    assert asked.price == (2.5, 10.0) and asked.context_window == 128_000
    refused = OpenAIChat("gpt-4o", catalogue=False)
    assert refused.price is None and refused.context_window is None


def test_given_price_and_window_override_the_catalogue() -> None:
    p = OpenAIChat("gpt-4o", price=(1.0, 2.0), context_window=4096)
    assert (p.price, p.context_window) == ((1.0, 2.0), 4096)
    assert p.rates is not None and p.rates.cost(Usage(1_000_000, 0)) == 1.0
    only_window = OpenAIChat("gpt-4o", context_window=4096)
    assert only_window.price == (2.5, 10.0)


@pytest.mark.parametrize("window", [0, -1, True, 1.5, "8k"])
def test_a_bad_context_window_is_refused(window: object) -> None:
    with pytest.raises(ValueError, match=r"OpenAIChat\.context_window"):
        OpenAIChat("m", context_window=window)  # type: ignore[arg-type]


def test_catalogue_takes_a_bool_or_none() -> None:
    with pytest.raises(TypeError, match=r"OpenAIChat\.catalogue"):
        OpenAIChat("m", catalogue="yes")  # type: ignore[arg-type]


def test_long_context_tiers_price_the_whole_call() -> None:
    rates = Rates(3.0, 15.0, ((200_000, 6.0),), ((200_000, 22.5),))
    assert rates.cost(Usage(200_000, 1_000)) == pytest.approx(0.6 + 0.015)
    assert rates.cost(Usage(200_001, 1_000)) == pytest.approx(200_001 * 6e-6 + 0.0225)


def test_lookups_never_touch_the_network() -> None:
    # A fresh interpreter whose every socket connection or DNS lookup raises:
    # importing the catalogue, building priced providers and costing a reply must work.
    script = textwrap.dedent(
        """
        import sys, threading

        def guard(event, args):
            if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
                raise RuntimeError(f"network access: {event} {args!r}")

        sys.addaudithook(guard)
        from orchestrator import Usage
        from providers import AnthropicMessages, GeminiGenerate, OpenAIChat
        from providers.http.cost import cost_of
        import genai_prices

        providers = [OpenAIChat("gpt-4o"), AnthropicMessages("claude-sonnet-4-5"),
                     GeminiGenerate("gemini-2.5-flash"), OpenAIChat("unknown-model")]
        costs = [cost_of(Usage(1000, 100), p.rates) for p in providers]
        assert costs[:3] == [c for c in costs[:3] if c and c > 0], costs
        assert costs[3] is None
        assert threading.active_count() == 1, threading.enumerate()  # no updater started
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_importing_providers_does_not_load_the_catalogue() -> None:
    script = "import sys, providers, orchestrator.cli.main; print('genai_prices' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_a_loopback_provider_does_not_load_the_catalogue() -> None:
    script = (
        "import sys; from providers import OpenAIChat; "
        "p = OpenAIChat('gpt-4o', base_url='http://127.0.0.1:9/v1'); "
        "print(p.price, 'genai_prices' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "None False", done.stderr[-2000:]


def test_chain_file_keys(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n"
        "  local: {type: openai, model: gpt-4o, base_url: 'http://127.0.0.1:9/v1',\n"
        "          context_window: 8192, catalogue: true}\n"
        "  mine: {type: gemini, model: gemini-2.5-flash, price: [1, 2], catalogue: false}\n"
    )
    providers = load_config(path, environ={}).providers
    local, mine = providers["local"], providers["mine"]
    assert isinstance(local, OpenAIChat) and isinstance(mine, GeminiGenerate)
    assert (local.context_window, local.price) == (8192, (2.5, 10.0))
    assert (mine.context_window, mine.price) == (None, (1.0, 2.0))


def test_chain_file_refuses_a_bad_window(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text("providers:\n  x: {type: openai, model: m, context_window: 0}\n")
    with pytest.raises(ConfigError, match="context_window"):
        load_config(path, environ={})
