"""Run one README snippet against the simulated server: the child side of tests/test_readme.py.

``python -m tests.readme_runner JOB.json`` (from the repository root, in a fresh
interpreter so no snippet sees another's logging or event settings). JOB is a
JSON object: ``kind`` ("python" or "failover"), ``code`` (Python source) or
``argv`` (the arguments after ``failover``), ``where`` ("README.md:LINE"),
``script`` (a fault script for the simulator, the ``failover simulate --script``
format, or null) and ``report`` (a path for the outcome as JSON).

The substitution, the only thing that differs from a user's run:

- a :class:`SimulatedServer` runs on loopback, scripted with ``script``;
- the environment is what ``failover simulate`` prints (``sim.environment()``): the
  base-URL variables the vendor providers read when built without ``base_url=``
  (``OPENAI_BASE_URL``...), a fake key per vendor (real keys are dropped, so nothing
  reaches a vendor) and ``FAILOVER_SIM_URL``, the root (``http://127.0.0.1:PORT``);
- ``AzureOpenAI`` is sent to the simulator's ``azure`` route whatever its
  ``resource=`` or ``endpoint=`` (named as the resource would name it);
- an ``HTTPFallback`` whose URL is not on loopback is sent to the simulator's
  ``http`` route. A snippet that passes its own loopback URL (its own
  ``SimulatedServer``) keeps it.

Python code may ``await`` at top level (as in ``python -m asyncio``): it then
runs in one event loop. The report says whether the snippet ran to its end and
how many requests the simulator answered.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import importlib.util
import inspect
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from providers.simulator import SimulatedServer
from providers.simulator.script import parse_script

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _defaulting(modules: tuple[str, ...], name: str, fix: Any) -> None:
    """Replace class ``name`` (defined in ``modules[0]``, re-exported by the others) by
    a subclass whose constructor first applies ``fix(args, kwargs)``; the subclass
    keeps the class's name, module and signature."""
    loaded = [importlib.import_module(m) for m in modules]
    original = getattr(loaded[0], name)

    @functools.wraps(original.__init__)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        args, kwargs = fix(list(args), dict(kwargs))
        original.__init__(self, *args, **kwargs)

    sub = type(name, (original,), {"__init__": __init__, "__module__": original.__module__})
    sub.__qualname__ = original.__qualname__
    for module in loaded:
        setattr(module, name, sub)


def substitute(sim: SimulatedServer) -> None:
    """Point the providers at ``sim`` with fake keys, as a user would (see the module doc)."""
    for var in KEY_VARS:
        os.environ.pop(var, None)
    os.environ.update(sim.environment())

    def http_url(args: list[Any], kwargs: dict[str, Any]) -> Any:
        url = args[0] if args else kwargs.get("url")
        if isinstance(url, str) and urlsplit(url).hostname not in LOOPBACK:
            if args:
                args[0] = sim.http_url
            else:
                kwargs["url"] = sim.http_url
        return args, kwargs

    _defaulting(("providers.generic_http", "providers"), "HTTPFallback", http_url)

    def azure_endpoint(args: list[Any], kwargs: dict[str, Any]) -> Any:
        endpoint = kwargs.get("endpoint")
        if isinstance(endpoint, str) and urlsplit(endpoint).hostname in LOOPBACK:
            return args, kwargs  # the snippet's own simulator
        resource = kwargs.pop("resource", None)  # the name a user would see stays
        if resource is not None:
            kwargs.setdefault("name", f"azure:{kwargs.get('deployment')}@{resource}")
        kwargs["endpoint"] = sim.azure_url
        return args, kwargs

    _defaulting(("providers.azure", "providers"), "AzureOpenAI", azure_endpoint)


def run_python(code: str, where: str) -> None:
    """Execute ``code`` as ``__main__``; top-level ``await`` runs in one event loop.

    Code that defines ``test_*`` functions is a test module: pytest runs it."""
    if _is_test_module(code):
        run_tests(code)
        return
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    compiled = compile(code, where, "exec", flags=flags, dont_inherit=True)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    if compiled.co_flags & inspect.CO_COROUTINE:
        asyncio.run(eval(compiled, namespace))
    else:
        exec(compiled, namespace)


def _is_test_module(code: str) -> bool:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    return any(
        isinstance(node, functions) and node.name.startswith("test_")
        for node in ast.parse(code).body
    )


def run_tests(code: str) -> None:
    """Run ``code`` as a pytest module in the working directory; raise unless all pass."""
    import pytest

    Path("test_snippet.py").write_text(code, encoding="utf-8")
    args = ["-q", "-p", "no:cacheprovider", "test_snippet.py"]
    if importlib.util.find_spec("pytest_asyncio") is not None:
        args += ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"]
    exit_code = pytest.main(args)
    if exit_code != 0:
        raise RuntimeError(f"pytest exited {int(exit_code)}")


def run_failover(argv: list[str]) -> int:
    """``failover ARGV`` in this process (so the substitution applies); its exit code."""
    from orchestrator.cli.main import main

    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    scripts, defaults = parse_script(job.get("script") or {})
    outcome: dict[str, Any] = {"completed": False, "requests": 0, "exit": None}
    with SimulatedServer.in_thread(script=scripts, defaults=defaults) as sim:
        substitute(sim)
        try:
            if job["kind"] == "python":
                run_python(job["code"], job["where"])
                outcome["exit"] = 0
            else:
                outcome["exit"] = run_failover(job["argv"])
            outcome["completed"] = True
        except SystemExit as exc:  # a script's sys.exit(): 0 or None is a normal end
            outcome["completed"] = exc.code in (0, None)
            outcome["exit"] = exc.code
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            outcome["requests"] = sim.count()
    Path(job["report"]).write_text(json.dumps(outcome), encoding="utf-8")
    return 0 if outcome["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
