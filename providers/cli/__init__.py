"""Coding-agent command-line tools (claude, codex, gemini, or any other) as providers.

``agents`` holds the generic :class:`CLIAgent`, ``presets`` the claude, codex and
gemini providers built on it; ``process`` runs one supervised subprocess;
``formats`` reads each CLI's structured output; ``classify`` maps what a CLI
printed to the taxonomy; ``gemini_settings`` switches off the gemini CLI's retries.
"""

from __future__ import annotations

from providers.cli.agents import CLIAgent, CLIOutput, render_prompt
from providers.cli.presets import ClaudeCode, Codex, GeminiCLI

__all__ = ["CLIAgent", "CLIOutput", "ClaudeCode", "Codex", "GeminiCLI", "render_prompt"]
