#!/usr/bin/env bash
# Install the coding-agent CLIs (claude, codex, gemini) from the npm registry into a
# local prefix, .cli-agents/ under the repository root, so the CLI integration tests
# (tests/providers/cli/test_cli_real.py) run against the real binaries.
#
# Idempotent: a package already installed at the pinned version is not fetched again.
# Binaries end up in .cli-agents/node_modules/.bin/ (claude, codex, gemini).
# Usage: scripts/install-cli-agents.sh [PREFIX]     (default: <repo>/.cli-agents)
# Without npm: under CI=true (as root) it installs nodejs/npm from Debian first, else it
# exits 0 without installing (the CLI integration tests then skip, saying why).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${1:-$ROOT/.cli-agents}"

# Pinned so CI is reproducible; bump deliberately (the parsers follow these versions' output).
PACKAGES=(
  "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION:-2.1}"
  "@openai/codex@${CODEX_VERSION:-0.171}"
  "@google/gemini-cli@${GEMINI_CLI_VERSION:-0.61}"
)

if ! command -v npm >/dev/null 2>&1 && [ "${CI:-}" = "true" ] && [ "$(id -u)" = 0 ] \
  && command -v apt-get >/dev/null 2>&1; then
  echo "install-cli-agents: npm not found; installing nodejs and npm from Debian" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "install-cli-agents: npm not found and could not be installed" >&2
    exit 1
  fi
  echo "install-cli-agents: npm not found; skipping (CLI integration tests will skip)" >&2
  exit 0
fi

mkdir -p "$PREFIX"
# A private package.json keeps npm from walking up into the repository.
[ -f "$PREFIX/package.json" ] || echo '{"name":"cli-agents","private":true}' >"$PREFIX/package.json"

need=()
for spec in "${PACKAGES[@]}"; do
  name="${spec%@*}"
  want="${spec##*@}"
  pkg_json="$PREFIX/node_modules/$name/package.json"
  if [ -f "$pkg_json" ]; then
    have="$(node -p "require('$pkg_json').version" 2>/dev/null || echo none)"
    # "latest" is satisfied by any installed version; "2.1" by any 2.1.x.
    if [ "$want" = "latest" ] || [ "$have" = "$want" ] || [[ "$have" == "$want".* ]]; then
      continue
    fi
  fi
  need+=("$spec")
done

if [ "${#need[@]}" -eq 0 ]; then
  echo "install-cli-agents: already installed in $PREFIX"
else
  echo "install-cli-agents: installing ${need[*]} into $PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${need[@]}"
fi

for bin in claude codex gemini; do
  if [ -x "$PREFIX/node_modules/.bin/$bin" ]; then
    echo "  $bin: $("$PREFIX/node_modules/.bin/$bin" --version 2>/dev/null | head -n1 || echo '?')"
  else
    echo "  $bin: MISSING" >&2
  fi
done
