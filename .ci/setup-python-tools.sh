#!/usr/bin/env bash
# Installs the pinned third-party Python tools the tests run against, into a venv next to this
# script: the LLM mock server (llmock) for the provider conformance tests, and two reference MCP
# servers (mcp-server-time, mcp-server-git) for the tool-calling tests, and the reference MCP
# SDK (mcp) as the third-party client of `huddle mcp`. Idempotent: a second
# run only checks the versions.
#
# Afterwards point the tests at them (they also look in .ci/.venv/bin by default):
#   export HUDDLE_LLMOCK="$PWD/.ci/.venv/bin/llmock"
#   export HUDDLE_MCP_TIME="$PWD/.ci/.venv/bin/mcp-server-time"
#   export HUDDLE_MCP_GIT="$PWD/.ci/.venv/bin/mcp-server-git"
#   export HUDDLE_TEST_PYTHON="$PWD/.ci/.venv/bin/python"
set -euo pipefail

LLMOCK_VERSION="0.2.2"
MCP_TIME_VERSION="2026.10.19"
MCP_GIT_VERSION="2026.10.19"
MCP_SDK_VERSION="2.3.0"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${HUDDLE_PY_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

# package executable version: one line per pinned tool.
pins="llmock llmock $LLMOCK_VERSION
mcp-server-time mcp-server-time $MCP_TIME_VERSION
mcp-server-git mcp-server-git $MCP_GIT_VERSION
mcp mcp $MCP_SDK_VERSION"

# True when `package` is installed at `version` with its executable in place.
installed() {
    [ -x "$venv/bin/$2" ] && "$venv/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(0 if m.version('$1') == '$3' else 1)" 2>/dev/null
}

missing=()
while read -r package executable version; do
    if installed "$package" "$executable" "$version"; then
        echo "$package $version already installed in $venv"
    else
        missing+=("$package==$version")
    fi
done <<<"$pins"

if [ "${#missing[@]}" -gt 0 ]; then
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    # Every pin in one resolve, so the tools' shared dependencies stay compatible.
    all=()
    while read -r package _ version; do all+=("$package==$version"); done <<<"$pins"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${all[@]}"
    echo "installed ${missing[*]} in $venv"
fi
echo "HUDDLE_LLMOCK=$venv/bin/llmock"
echo "HUDDLE_MCP_TIME=$venv/bin/mcp-server-time"
echo "HUDDLE_MCP_GIT=$venv/bin/mcp-server-git"
echo "HUDDLE_TEST_PYTHON=$venv/bin/python"
