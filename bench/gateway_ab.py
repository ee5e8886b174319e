"""Two source trees' gateways in turn against one simulator: CPU per request, paired rounds.

    git archive main | tar -x -C /tmp/main-src
    python bench/gateway_ab.py /tmp/main-src . [--rounds 4] [--seconds 4]

On a shared, noisy machine two separate runs of ``gateway.py --only servers`` differ by more
than a change's effect; here each round measures the aiohttp pass-through, then each tree's
gateway (granian, one worker pinned to CPU 0, 50 connections) on each upstream transport,
back to back, and prints every round and the medians (ratios within a round hold best).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from gateway import CHAIN, Server, Sim, floor, measure, request_bytes, reqwest_chain


def tree_gateway(sim: Sim, chain: Path, tree: Path) -> Server:
    """The gateway of source tree ``tree`` (its own ``providers`` and ``orchestrator``)."""
    argv = [sys.executable, "-m", "providers.serve", str(chain), "--workers", "1"]
    argv += ["--server", "granian", "--max-in-flight", "1024"]
    env = {"SIM": sim.url, "K": "sk-bench", "FAILOVER_GATEWAY_KEYS": "", "PYTHONPATH": str(tree)}
    with contextlib.chdir(tree):  # python -m finds the tree's packages first
        return Server(argv, "0", env)


async def main(args: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {1})
    sim = Sim()
    chain = Path(tempfile.mkdtemp()) / "chain.yaml"
    chain.write_text(CHAIN)
    chains = {"aiohttp": chain, "reqwest": reqwest_chain(chain)}
    trees = {"a": Path(args.a).resolve(), "b": Path(args.b).resolve()}
    cpu: dict[str, list[float]] = {}
    try:
        sim.defaults({})
        for round_ in range(args.rounds):
            starts = {"pass-through": lambda: floor(sim)}
            for t, tree in trees.items():
                for transport in args.transports.split(","):
                    c = chains[transport]
                    starts[f"{t}/{transport}"] = lambda c=c, tree=tree: tree_gateway(sim, c, tree)
            for name, start in starts.items():
                server = start()
                try:
                    row = await measure(server, 50, args.seconds, request_bytes())
                finally:
                    server.close()
                cpu.setdefault(name, []).append(row["cpu_us"])
                load = os.getloadavg()[0]
                print(f"round {round_} {name}: {row['rps']:.0f} req/s, {row['cpu_us']:.0f} us "
                      f"(load {load:.2f})", flush=True)  # fmt: skip
    finally:
        sim.close()
    for name, values in cpu.items():
        print(f"{name}: median {sorted(values)[len(values) // 2]:.0f} us, rounds "
              f"{[round(v) for v in values]}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="a source tree (the baseline)")
    parser.add_argument("b", help="another source tree")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--transports", default="aiohttp,reqwest")
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    asyncio.run(main(parser.parse_args()))
