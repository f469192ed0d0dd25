#!/usr/bin/env bash
# Installs the system packages the tests need that a bare machine lacks: bubblewrap (`bwrap`,
# huddle's sandbox; the sandbox tests run it for real). Skips what is installed already.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

# package binary: one line per package.
packages="bubblewrap bwrap"

missing=()
while read -r package binary; do
    if command -v "$binary" >/dev/null 2>&1; then
        echo "$package already installed ($(command -v "$binary"))"
    else
        missing+=("$package")
    fi
done <<<"$packages"

if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "cannot install ${missing[*]}: no apt-get here; install them with the system's package manager" >&2
        exit 1
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
    echo "installed ${missing[*]}"
fi
