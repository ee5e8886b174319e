"""Turn a validated chain file into the objects Python code builds.

Providers are built by their type's spec (``ProviderSpec.build``), agents
become ``FallbackAgent`` s (nested agents built first, cycles refused) and
workflows become ``Workflow`` s. Every reference is checked here, and every
error names what does exist.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

from orchestrator.capacity import Budget, Limits
from orchestrator.config.health import build_health
from orchestrator.config.hooks import callable_at as _callable
from orchestrator.config.hooks import import_object
from orchestrator.config.hooks import matcher as _matcher
from orchestrator.config.problems import ConfigError, Path, Problem, field_path, value_at
from orchestrator.config.schema import AgentSpec, ChainSpec, ChildSpec, WorkflowSpec
from orchestrator.config.scrub import EnvValues, constructor_problem
from orchestrator.config.source import Source
from orchestrator.config.spec import ProviderSpec, given
from orchestrator.engine.agent import FallbackAgent
from orchestrator.ignored import IgnoredSetting
from orchestrator.policy import RetryPolicy

__all__ = ["build_agents", "build_providers", "build_workflows", "import_object"]

_HOOKS = ("on_fallback", "on_retry", "on_all_failed", "before_fallback", "accept", "best_effort")


@dataclass(frozen=True, slots=True)
class _Context:
    """What a provider type's ``build`` may ask of the chain file (a ``BuildContext``)."""

    src: Source
    name: str
    entry: Path  # the entry it was declared by (one entry declares each region's)

    def hook(self, field: str, value: str) -> Callable[..., Any]:
        return _callable(self.src, (*self.entry, field), value)


def build_providers(src: Source, spec: ChainSpec, env: EnvValues) -> dict[str, Any]:
    """Every declared provider, built by its spec; ``ConfigError`` listing every problem.

    The specs have checked every rule they know, each at its own field; an
    error only a constructor knows is reported at the provider, scrubbed of
    environment values.
    """
    out: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, pspec in spec.providers.items():
        where = spec.origins.get(name, ("providers", name))  # a region's: its list item
        try:
            out[name] = with_capacity(pspec.build(_Context(src, name, where[:2])), pspec)
        except ConfigError as exc:
            problems.extend(exc.problems)
        except (ValueError, TypeError) as exc:
            problems.append(constructor_problem(src, where, exc, env))
    if problems:
        problems.sort(key=lambda p: p.line if p.line is not None else 1 << 30)
        raise ConfigError(problems)
    return out


def with_capacity(provider: Any, pspec: ProviderSpec) -> Any:
    """``provider`` with the file's ``limits`` and ``budget`` for it (read by the engine)."""
    if pspec.limits is not None:
        provider.limits = Limits(**pspec.limits.model_dump(exclude_none=True))
    if pspec.budget is not None:
        provider.budget = Budget(**pspec.budget.model_dump())
    return provider


def _names(items: Mapping[str, Any]) -> str:
    return ", ".join(items) or "(none)"


def build_agents(
    src: Source, spec: ChainSpec, built: Mapping[str, Any], env: EnvValues
) -> dict[str, FallbackAgent]:
    """Every agent as a ``FallbackAgent``; nested agents first, cycles refused."""
    for name in spec.agents:
        if name in spec.providers or name in spec.groups:
            raise src.error(
                ("agents", name),
                f"the name {name!r} is also a provider's; give agents and providers distinct names",
            )
    agents: dict[str, FallbackAgent] = {}
    visiting: list[str] = []
    stores: dict[Any, Any] = {}  # health settings -> the one store agents with them share

    def visit(name: str) -> FallbackAgent:
        if name in agents:
            return agents[name]
        visiting.append(name)
        aspec = spec.agents[name]
        health = build_health(src, ("agents", name, "health"), aspec.health, env, stores)
        with _located(src, ("agents", name)):
            agents[name] = _agent(src, spec, name, aspec, built, visit, visiting, env, health)
        visiting.pop()
        return agents[name]

    for name in spec.agents:
        visit(name)
    return {name: agents[name] for name in spec.agents}


def _child(
    src: Source,
    spec: ChainSpec,
    path: Path,
    child: ChildSpec,
    built: Mapping[str, Any],
    visit: Any,
    visiting: list[str],
) -> Any:
    target = child.target
    if child.ref is not None and target in built:
        return built[target]
    if target in spec.agents:
        if target in visiting:
            loop = [*visiting[visiting.index(target) :], target]
            raise src.error(
                path,
                f"cycle between agents: {' -> '.join(loop)}; an agent cannot contain itself",
            )
        return visit(target)
    if child.agent is not None:
        raise src.error(
            (*path, "agent"), f"{target!r} names no agent; agents: {_names(spec.agents)}"
        )
    raise src.error(
        (*path, "ref") if isinstance(value_at(src.data, path), Mapping) else path,
        f"{target!r} names no provider or agent; providers: {_names(spec.providers)}; "
        f"agents: {_names(spec.agents)}",
    )


def _agent(
    src: Source,
    spec: ChainSpec,
    name: str,
    aspec: AgentSpec,
    built: Mapping[str, Any],
    visit: Any,
    visiting: list[str],
    env: EnvValues,
    health: Any,
) -> FallbackAgent:
    where: Path = ("agents", name)
    defaults = aspec.policy_overrides()
    children: list[Any] = []
    policies: dict[str, RetryPolicy] = {}
    for i, child in enumerate(aspec.providers):
        cpath: Path = (*where, "providers", i)
        # An entry with regions: is its providers, in order.
        group = spec.groups.get(child.target, ()) if child.ref is not None else ()
        for target in group or (child.target,):
            node = (
                built[target] if group else _child(src, spec, cpath, child, built, visit, visiting)
            )
            children.append(node)
            pspec = spec.providers.get(target) if child.ref is not None else None
            own = {**(pspec.policy_overrides() if pspec is not None else {})}
            own.update(child.policy_overrides())
            if own:
                try:
                    policies[node.name] = RetryPolicy(**{**defaults, **own})
                except (ValueError, TypeError) as exc:
                    raise ConfigError([constructor_problem(src, cpath, exc, env)]) from None
    hooks: dict[str, Any] = {
        h: _callable(src, (*where, h), getattr(aspec, h))
        for h in _HOOKS
        if getattr(aspec, h) is not None
    }
    for field in ("retry_on", "fallback_on"):
        paths = getattr(aspec, field)
        if paths is not None:
            objs = [import_object(src, (*where, field, i), p) for i, p in enumerate(paths)]
            hooks[field] = _matcher(src, (*where, field), objs)
    try:
        routing, kind = _routing(aspec)
        return kind(
            children,
            **routing,
            name=name,
            policies=policies,
            timeout=aspec.timeout,
            attempt_timeout=aspec.attempt_timeout,
            first_token_timeout=aspec.first_token_timeout,
            idle_timeout=aspec.idle_timeout,
            hedge_after=aspec.hedge_after,
            max_hedges=aspec.max_hedges,
            mid_stream=aspec.mid_stream,
            escalate_on_guardrail=aspec.escalate_on_guardrail,
            tracing=aspec.tracing,
            capture_content=aspec.capture_content,
            health=health,
            budget=None if aspec.budget is None else Budget(**aspec.budget.model_dump()),
            **given(
                wait_for_capacity=aspec.wait_for_capacity,
                max_retries=aspec.max_retries,
                retry_strategy=aspec.retry_strategy,
                retry_delay=aspec.retry_delay,
                max_delay=aspec.max_delay,
                jitter=aspec.jitter,
                schema_retries=aspec.schema_retries,
            ),
            **hooks,
        )
    except (ValueError, TypeError) as exc:
        raise ConfigError([constructor_problem(src, where, exc, env)]) from None


def _routing(aspec: AgentSpec) -> tuple[dict[str, Any], Callable[..., FallbackAgent]]:
    """The routing arguments of an agent (``order``, ``weights``, ``affinity``), and the
    class to build: a :class:`~orchestrator.Split` for ``split:``."""
    ttl = {"affinity_ttl": aspec.affinity.ttl} if aspec.affinity is not None else {}
    if aspec.split is None:
        return {"order": aspec.order, **given(weights=aspec.weights), **ttl}, FallbackAgent
    if aspec.order != "priority" or aspec.weights is not None:
        raise ValueError("split: the arms' weights are the order; drop order and weights")
    from orchestrator.routing.split import Split

    split = aspec.split
    return ttl, lambda children, **kw: Split(split, children=children, **kw)


@contextmanager
def _located(src: Source, where: Path) -> Iterator[None]:
    """Re-issue the :class:`IgnoredSetting` warnings of building ``where`` at its line in the
    chain file (``chain.yaml:7: IgnoredSetting: agents.review: ...``), not in this module."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IgnoredSetting)
        yield
    for w in caught:
        if issubclass(w.category, IgnoredSetting) and w.filename != src.file:
            message = f"{field_path(where)}: {w.message}"
            warnings.warn_explicit(message, IgnoredSetting, src.file, src.locate(where) or 0)
        else:  # another kind, or a nested agent's, located already: as it was
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def build_workflows(
    src: Source,
    spec: ChainSpec,
    agents: Mapping[str, Any],
    built: Mapping[str, Any],
    env: EnvValues,
) -> dict[str, Any]:
    """Every workflow as a ``Workflow``; each step's ``agent`` names an agent or a provider."""
    if not spec.workflows:
        return {}
    from orchestrator.workflow import Workflow

    out: dict[str, Any] = {}
    journal = _journal(src, spec.journal)
    for name, wspec in spec.workflows.items():
        phases = _phases(src, name, wspec, agents, built, env)
        try:
            out[name] = Workflow(*phases, name=name, journal=journal)
        except (ValueError, TypeError) as exc:
            where: Path = ("workflows", name)
            raise ConfigError([constructor_problem(src, where, exc, env)]) from None
    return out


def _journal(src: Source, journal: str | None) -> str | None:
    """``journal:``; a plain relative path is relative to the chain file."""
    if journal is None or "://" in journal or FilePath(journal).is_absolute():
        return journal
    return str(FilePath(src.file).parent / journal)


def _phases(
    src: Source,
    name: str,
    wspec: WorkflowSpec,
    agents: Mapping[str, Any],
    built: Mapping[str, Any],
    env: EnvValues,
) -> list[Any]:
    from orchestrator.workflow import Parallel, Phase, Step

    phases = []
    seen: dict[str, Path] = {}
    for i, phase in enumerate(wspec.phases):
        ppath: Path = ("workflows", name, "phases", i)
        steps = []
        for j, step in enumerate(phase.steps):
            spath: Path = (*ppath, "steps", j)
            if step.name in seen:
                raise src.error(
                    (*spath, "name"),
                    f"step name {step.name!r} is already used at "
                    f"{field_path(seen[step.name])}; step names must be unique",
                )
            seen[step.name] = spath
            node = agents.get(step.agent, built.get(step.agent))
            if node is None:
                raise src.error(
                    (*spath, "agent"),
                    f"{step.agent!r} names no agent or provider; agents: {_names(agents)}; "
                    f"providers: {_names(built)}",
                )
            try:
                steps.append(
                    Step(
                        step.name,
                        node,
                        prompt=step.prompt,
                        continue_on_error=step.continue_on_error,
                        on_interrupted=step.on_interrupted,
                        mid_stream=step.mid_stream,
                    )
                )
            except (ValueError, TypeError) as exc:
                raise src.error((*spath, "name"), env.scrub(str(exc), spath)) from None
        if phase.limit is not None and not phase.parallel:
            raise src.error((*ppath, "limit"), "limit applies only with parallel: true")
        nodes = [Parallel(*steps, limit=phase.limit)] if phase.parallel else steps
        phases.append(Phase(phase.name, *nodes))
    return phases
