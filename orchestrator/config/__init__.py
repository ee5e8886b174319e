"""The chain file: declare providers, agents and workflows in YAML or TOML.

``load_config("chain.yaml")`` reads the file (YAML with ``yaml.safe_load``,
TOML with ``tomllib``, chosen by extension), refuses literal API keys,
expands ``${VAR}`` / ``${VAR:-default}`` from the environment, validates it
(unknown keys are errors) and builds the same objects Python code builds::

    providers:
      codex:  {type: openai, model: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}
      claude: {type: anthropic, model: claude-sonnet-4-5, api_key: "${ANTHROPIC_API_KEY}",
               max_retries: 1}
    agents:
      review:
        providers: [codex, {ref: claude, retry_strategy: linear}]
        max_retries: 2
        retry_delay: 0.5
        on_fallback: myhooks:notify

Every problem raises :class:`ConfigError` whose lines read
``chain.yaml:14: agents.review.providers[1].retry_strategy: 'expo' is not one of
exponential, linear, none``.

A provider type is a spec registered under the ``failover.providers`` entry
points (see :mod:`orchestrator.config.spec`, the plug-in API). Only
``ConfigError`` and ``Problem`` load with this package; ``load_config`` and
``Config`` load on first use, so a provider module importing the spec API
does not load the chain-file machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.config.problems import ConfigError, Problem

if TYPE_CHECKING:
    from orchestrator.config.loader import Config, load_config

__all__ = ["Config", "ConfigError", "Problem", "load_config"]


def __getattr__(name: str) -> Any:
    if name not in ("Config", "load_config"):
        raise AttributeError(f"module 'orchestrator.config' has no attribute {name!r}")
    from orchestrator.config import loader

    return getattr(loader, name)
