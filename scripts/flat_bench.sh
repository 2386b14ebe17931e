#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Small all-reduce over shm with and without the flat algorithm, beside Open MPI, in one run:
# for each repeat, N and size, loom-bench with LOOM_FLAT=0 (the message path the tuner chose
# before flat existed), loom-bench as built (the tuner may now pick flat) and Open MPI's
# bench/peers harness, interleaved so machine noise hits all three alike; the table is the
# median over repeats of each run's p50 (bench/peers' timing: a barrier, then one call,
# last rank in to last rank out), µs.
# Usage: scripts/flat_bench.sh [BUILD_DIR] [REPEATS]   (BUILD_DIR default build; 5 repeats)
# Open MPI's harness is built into BUILD_DIR/peers/ when mpicc.openmpi is present; without it
# the Open MPI column says "–". The loom tools must be built (loom-bench, loomrun).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
repeats=${2:-5}
cd "$root"
bench=$build/tools/loom-bench/loom-bench
run=$build/tools/loomrun/loomrun
[ -x "$bench" ] && [ -x "$run" ] || { echo "flat_bench: build $bench and $run first" >&2; exit 1; }
mpi=""
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mkdir -p "$build/peers"
    mpi=$build/peers/peers_openmpi
    [ "$mpi" -nt bench/peers/peers_mpi.c ] ||
        mpicc.openmpi -O2 -o "$mpi" bench/peers/peers_mpi.c
fi
as_root=()
[ "$(id -u)" -eq 0 ] && as_root=(--allow-run-as-root)
export LOOM_CALIBRATE=${LOOM_CALIBRATE:-off}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw.csv
: >"$raw"
iters=200
for rep in $(seq "$repeats"); do
    for n in 2 4 8; do
        for b in 8 1024 16384 65536; do
            for mode in before after; do
                rm -f "$tmp/loom.csv"
                flat=$([ "$mode" = before ] && echo 0 || echo 1)
                LOOM_FLAT=$flat timeout 300 "$run" -n "$n" --transport shm -- "$bench" allreduce \
                    -b "$b" -e "$b" -n "$iters" -w 20 --timing barrier --outofplace -c 0 \
                    --csv "$tmp/loom.csv" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; continue; }
                python3 - "$tmp/loom.csv" "$mode" "$n" "$b" >>"$raw" <<'EOF'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("inplace") != "1" and r["p50_us"]:
        print(f"{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{r['p50_us']},{r.get('algo', '')}")
EOF
            done
            if [ -n "$mpi" ]; then
                timeout 300 mpirun.openmpi "${as_root[@]}" --oversubscribe --bind-to none -np "$n" \
                    "$mpi" openmpi allreduce "$b:$iters:20" 2>/dev/null |
                    awk -F, -v n="$n" -v b="$b" '$1 == "openmpi" { print "openmpi," n "," b "," $5 ",-" }' \
                        >>"$raw" || true
            fi
        done
    done
done
python3 - "$raw" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
algo = {}
for line in open(sys.argv[1]):
    mode, n, b, p50, a = line.strip().split(",")
    rows[(mode, int(n), int(b))].append(float(p50))
    if a and a != "-":
        algo[(mode, int(n), int(b))] = a
def med(k):
    return statistics.median(rows[k]) if rows.get(k) else None
def f(x):
    return "–" if x is None else f"{x:.2f}"
print("| N | size | before (LOOM_FLAT=0) µs | after µs | Open MPI µs | after ÷ before | after ÷ Open MPI |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for n in (2, 4, 8):
    for b in (8, 1024, 16384, 65536):
        bef, aft, mpi = med(("before", n, b)), med(("after", n, b)), med(("openmpi", n, b))
        size = f"{b} B" if b < 1024 else f"{b // 1024} KiB"
        r1 = f"{aft / bef:.2f}" if bef and aft else "–"
        r2 = f"{aft / mpi:.2f}" if mpi and aft else "–"
        print(f"| {n} | {size} | {f(bef)} ({algo.get(('before', n, b), '?')}) | {f(aft)} "
              f"({algo.get(('after', n, b), '?')}) | {f(mpi)} | {r1} | {r2} |")
EOF
