"""A real HTTP server on loopback speaking the OpenAI, Anthropic and Gemini wire formats.

``server`` holds :class:`SimulatedServer`; ``command`` the command line; ``faults`` what a
request gets; ``script`` the script-file format; ``http11`` the HTTP/1.1 server;
``respond`` renders a fault; ``hostile`` the oversized and endless replies; ``benchmark``
the faults of an outside failover benchmark (reset, unterminated);
``wires/`` one module per wire format.
"""

from __future__ import annotations

from providers.simulator.benchmark import BenchmarkFault
from providers.simulator.command import main
from providers.simulator.script import load_script
from providers.simulator.server import ROUTES, Fault, SimulatedServer

__all__ = ["ROUTES", "BenchmarkFault", "Fault", "SimulatedServer", "load_script", "main"]
