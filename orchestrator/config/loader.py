"""``load_config``: read, check and build a chain file (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.config.build import build_agents, build_providers, build_workflows
from orchestrator.config.env import check_secrets, expand_env
from orchestrator.config.scrub import EnvValues
from orchestrator.config.source import read_source
from orchestrator.config.validate import validate
from orchestrator.engine.agent import FallbackAgent

__all__ = ["Config", "load_config"]


@dataclass(frozen=True)
class Config:
    """A loaded chain file: built providers, agents (``FallbackAgent``) and workflows by name.

    ``provider_types`` maps each provider to its ``type`` in the file (for
    tables such as ``failover check --ping``).
    """

    path: str
    providers: dict[str, Any]
    agents: dict[str, FallbackAgent]
    workflows: dict[str, Any]
    provider_types: dict[str, str] = field(default_factory=dict)
    #: The ``gateway:`` section for ``failover serve`` (``keys_file``), as the file set it.
    gateway: dict[str, Any] = field(default_factory=dict)

    @property
    def health_stores(self) -> list[Any]:
        """The distinct health stores of the file's agents (agents may share one)."""
        stores = [a.health_store for a in self.agents.values() if a.health_store is not None]
        return list({id(s): s for s in stores}.values())

    async def open_health(self, stack: AsyncExitStack) -> None:
        """Bring each shared store up to date (``sync``, bounded by the store's own timeout)
        and close it when ``stack`` unwinds, so a one-shot process sees the circuits others
        opened and leaves what it recorded. For commands; a long-lived process needs neither."""
        for store in self.health_stores:
            stack.push_async_callback(store.aclose)
            sync = getattr(store, "sync", None)
            if sync is not None:
                names = [
                    child.name
                    for agent in self.agents.values()
                    if agent.health_store is store
                    for child in agent.children
                ]
                await sync(names)

    def agent(self, name: str | None = None) -> FallbackAgent:
        """The agent called ``name``, or the only agent when ``name`` is None."""
        if name is None:
            if len(self.agents) == 1:
                return next(iter(self.agents.values()))
            raise KeyError(
                f"{self.path} declares {len(self.agents)} agents "
                f"({', '.join(self.agents) or 'none'}); name one"
            )
        try:
            return self.agents[name]
        except KeyError:
            raise KeyError(
                f"{self.path}: no agent {name!r}; agents: {', '.join(self.agents) or '(none)'}"
            ) from None

    def __repr__(self) -> str:
        return (
            f"Config(path={self.path!r}, providers={list(self.providers)}, "
            f"agents={list(self.agents)}, workflows={list(self.workflows)})"
        )


def load_config(
    path: str | Path, *, environ: Mapping[str, str] | None = None, need_keys: bool = True
) -> Config:
    """Load, check and build a chain file; raises :class:`ConfigError` on any problem.

    ``environ`` replaces ``os.environ`` for ``${VAR}`` expansion (for tests).
    ``need_keys=False`` accepts providers whose key variable is unset, for a
    command that sends nothing (``failover health``).
    Hooks given as ``"package.module:function"`` are imported from the chain
    file's directory, the working directory or the installed packages.
    """
    src = read_source(path)
    check_secrets(src)
    env = EnvValues(*expand_env(src, environ, need_keys=need_keys))
    spec = validate(src, env)
    built = build_providers(src, spec, env)
    agents = build_agents(src, spec, built, env)
    workflows = build_workflows(src, spec, agents, built, env)
    return Config(
        path=src.file,
        providers=built,
        agents=agents,
        workflows=workflows,
        provider_types={name: p.type for name, p in spec.providers.items()},
        gateway=spec.gateway.model_dump(exclude_none=True) if spec.gateway else {},
    )
