#!/usr/bin/env bash
# Makes layout/hot-symbols.txt again (see build.rs and docs/development.md, "Release builds"):
# builds huddle as `cargo build --release` does and as `cargo bench` does (the benches' dev
# dependencies change its dependencies' features, so every name), runs the memory benchmark's
# small part (`presets list`, an idle host, a 198-message run with its `huddle run`) with every
# huddle process of each build under callgrind, and lists the functions of each binary that
# ran, the most run first. Needs valgrind; takes about 15 minutes on 2 cores. Run it again after
# a new toolchain or new versions of dependencies (their functions' names change), then build.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

profile() { # binary, name: callgrind profiles of the benchmark's small part run with it
  local bin=$1 name=$2
  cat > "$work/$name.sh" <<WRAPPER
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file=$work/$name.%p.callgrind --dump-instr=no \
  --compress-strings=no --compress-pos=no --demangle=no -q "$bin" "\$@"
WRAPPER
  chmod +x "$work/$name.sh"
  HUDDLE_BENCH_MEMORY=small HUDDLE_BENCH_BIN="$work/$name.sh" "$harness" --bench
  python3 layout/hot_symbols.py "$bin" "$work/$name".*.callgrind > "$work/$name.txt"
}

cargo build --release
cp "$target/release/huddle" "$work/huddle-release"
harness=$(cargo bench --bench memory --no-run --message-format=json |
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "memory" and m.get("executable"):
        print(m["executable"])')
cp "$target/release/huddle" "$work/huddle-bench"
profile "$work/huddle-release" release
profile "$work/huddle-bench" bench
# Each build finds its own names (the other's are skipped by the linker).
awk '!seen[$0]++' "$work/release.txt" "$work/bench.txt" > layout/hot-symbols.txt
wc -l "$work/release.txt" "$work/bench.txt" layout/hot-symbols.txt
