"""Coding-agent command-line tools (claude, codex, gemini, or any other) as providers.

``agents`` holds the providers; ``process`` runs one supervised subprocess;
``formats`` reads each CLI's structured output; ``classify`` maps what a CLI
printed to the taxonomy; ``gemini_settings`` switches off the gemini CLI's retries.
"""

from __future__ import annotations

from providers.cli.agents import ClaudeCode, CLIAgent, CLIOutput, Codex, GeminiCLI, render_prompt

__all__ = ["CLIAgent", "CLIOutput", "ClaudeCode", "Codex", "GeminiCLI", "render_prompt"]
