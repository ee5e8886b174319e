"""What ``failover run`` checks before it sends anything; ``failover check`` runs the same.

One code path for both commands, so a file ``check`` passes is one ``run``
accepts: the chain file loads (``load_config``: shapes, references, hooks,
secrets), and every workflow's prompts name only inputs and earlier steps
(:meth:`Workflow.check_inputs`). ``check`` does not know the inputs a run will
give, so it assumes the ones the prompts ask for by bare name (``{audience}``);
a dotted name (``{reviw.text}``) can only be a step, as command-line inputs are
text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from orchestrator.cli.text import UsageError
from orchestrator.config import Config, ConfigError, load_config

__all__ = ["check_workflow", "load", "names", "workflow_inputs"]


def load(path: str, *, need_keys: bool = True) -> Config:
    """The chain file, or ``UsageError`` listing every problem (exit 2)."""
    try:
        return load_config(path, need_keys=need_keys)
    except ConfigError as exc:
        raise UsageError(str(exc).replace("\n", "\nfailover: error: ")) from None


def names(items: Mapping[str, Any]) -> str:
    """``a, b`` or ``(none)``: what exists, for messages."""
    return ", ".join(items) or "(none)"


def _steps(workflow: Any) -> Iterator[Any]:
    for phase in workflow.phases:
        for node in phase.nodes:
            yield from getattr(node, "steps", (node,))


def workflow_inputs(workflow: Any) -> list[str]:
    """The inputs a workflow's prompts need (sorted): ``input``, and every bare
    ``{name}`` that is not a step."""
    steps = {step.name for step in _steps(workflow)}
    wanted = {"input"}
    for step in _steps(workflow):
        wanted.update(root for root, attr in step.references() if attr is None)
    return sorted(wanted - steps)


def check_workflow(name: str, workflow: Any, inputs: Mapping[str, Any]) -> None:
    """``UsageError`` when a prompt of workflow ``name`` names something that is
    neither one of ``inputs`` nor an earlier step (the workflow's own rule)."""
    try:
        workflow.check_inputs(inputs)
    except ValueError as exc:
        raise UsageError(f"workflow {name}: {exc}") from None


def check_config(config: Config) -> None:
    """Every check ``run`` makes before sending, for every agent and workflow of the file."""
    for name, workflow in config.workflows.items():
        check_workflow(name, workflow, dict.fromkeys(workflow_inputs(workflow), ""))
