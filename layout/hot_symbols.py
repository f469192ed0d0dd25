"""The functions of a binary that ran in callgrind profiles, the most run first (their own
instructions), one name a line.

Usage: hot_symbols.py BINARY CALLGRIND_OUT...  (see make-hot-symbols.sh). Only names that are
functions of BINARY (its symbol table, `nm`) are listed: callgrind's cycle marks (`'2`) are
removed, names of other objects (libc) skipped.
"""

import collections
import re
import subprocess
import sys


def functions(binary):
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            names.add(parts[2])
    return names


def costs(paths, binary):
    cost = collections.Counter()
    for path in paths:
        ours = False
        fn = None
        call = False
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("ob="):
                    ours = line[3:].strip() == binary
                elif line.startswith("fn="):
                    fn = re.sub(r"'\d+$", "", line[3:].strip()) if ours else None
                    if fn:
                        cost[fn] += 0
                elif line.startswith("calls="):
                    # The next cost line is the callee's (inclusive): not this function's own.
                    call = True
                elif line[:1].isdigit():
                    parts = line.split()
                    if fn and not call and len(parts) >= 2 and parts[1].isdigit():
                        cost[fn] += int(parts[1])
                    call = False
    return cost


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: hot_symbols.py BINARY CALLGRIND_OUT...")
    binary = sys.argv[1]
    known = functions(binary)
    if not known:
        sys.exit(f"{binary} has no symbol table (a release build of this tree keeps it)")
    cost = costs(sys.argv[2:], binary)
    hot = [name for name, _ in sorted(cost.items(), key=lambda kv: (-kv[1], kv[0])) if name in known]
    if not hot:
        sys.exit("no function of the binary ran in these profiles")
    print("\n".join(hot))


if __name__ == "__main__":
    main()
