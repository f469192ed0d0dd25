#!/usr/bin/env bash
# Installs the pinned third-party LLM mock server (llmock) that the provider conformance tests
# run against, into a venv next to this script. Idempotent: a second run only checks the version.
#
# Afterwards point the tests at it:
#   export HUDDLE_LLMOCK="$PWD/.ci/.venv/bin/llmock"
set -euo pipefail

LLMOCK_VERSION="0.2.2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${HUDDLE_PY_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

if [ -x "$venv/bin/llmock" ] && "$venv/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(0 if m.version('llmock') == '$LLMOCK_VERSION' else 1)" 2>/dev/null; then
    echo "llmock $LLMOCK_VERSION already installed in $venv"
else
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "llmock==$LLMOCK_VERSION"
    echo "installed llmock $LLMOCK_VERSION in $venv"
fi
echo "HUDDLE_LLMOCK=$venv/bin/llmock"
