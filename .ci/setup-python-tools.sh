#!/usr/bin/env bash
# Installs the pinned third-party Python tools the tests run against, into a venv next to this
# script: the LLM mock server (llmock) for the provider conformance tests, two reference MCP
# servers (mcp-server-time, mcp-server-git) for the tool-calling tests, and the reference SDKs
# of the agent protocols: agent-client-protocol (an ACP agent), a2a-sdk with uvicorn (an A2A
# counterpart), opentelemetry-proto (an OTLP receiver) and claude-agent-sdk, whose wheel bundles
# the Claude Code CLI the approval tests run offline. Idempotent: a second run only checks the
# versions.
#
# Afterwards point the tests at them (they also look in .ci/.venv/bin by default):
#   export HUDDLE_LLMOCK="$PWD/.ci/.venv/bin/llmock"
#   export HUDDLE_MCP_TIME="$PWD/.ci/.venv/bin/mcp-server-time"
#   export HUDDLE_MCP_GIT="$PWD/.ci/.venv/bin/mcp-server-git"
#   export HUDDLE_TEST_PYTHON="$PWD/.ci/.venv/bin/python"   # runs the protocol test peers
#   export HUDDLE_CLAUDE=.../site-packages/claude_agent_sdk/_bundled/claude   # printed below
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${HUDDLE_PY_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

# requirement executable version: one line per pinned tool (`-`: a library, no executable).
# The requirement may name extras (`a2a-sdk[http-server]`); the version is the distribution's.
pins="llmock llmock 0.2.2
mcp-server-time mcp-server-time 2026.10.19
mcp-server-git mcp-server-git 2026.10.19
mcp - 2.3.0
agent-client-protocol - 0.12.1
a2a-sdk[http-server] - 1.3.0
uvicorn uvicorn 0.54.0
opentelemetry-proto - 1.45.2
claude-agent-sdk - 0.2.189"

# True when the distribution of `requirement` is installed at `version` (with its executable in
# place, when it has one).
installed() {
    local dist="${1%%[*}"
    { [ "$2" = "-" ] || [ -x "$venv/bin/$2" ]; } && [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(0 if m.version('$dist') == '$3' else 1)" 2>/dev/null
}

missing=()
while read -r requirement executable version; do
    if installed "$requirement" "$executable" "$version"; then
        echo "$requirement $version already installed in $venv"
    else
        missing+=("$requirement==$version")
    fi
done <<<"$pins"

if [ "${#missing[@]}" -gt 0 ]; then
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    # Every pin in one resolve, so the tools' shared dependencies stay compatible.
    all=()
    while read -r requirement _ version; do all+=("$requirement==$version"); done <<<"$pins"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${all[@]}"
    echo "installed ${missing[*]} in $venv"
fi
echo "HUDDLE_LLMOCK=$venv/bin/llmock"
echo "HUDDLE_MCP_TIME=$venv/bin/mcp-server-time"
echo "HUDDLE_MCP_GIT=$venv/bin/mcp-server-git"
echo "HUDDLE_TEST_PYTHON=$venv/bin/python"
echo "HUDDLE_CLAUDE=$("$venv/bin/python" -c 'import claude_agent_sdk, os; print(os.path.join(os.path.dirname(claude_agent_sdk.__file__), "_bundled", "claude"))' 2>/dev/null || echo "(claude-agent-sdk not importable)")"
