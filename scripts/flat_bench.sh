#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Small all-reduce, all-gather and all-to-all over shm with and without the flat algorithm,
# beside Open MPI, in one run: for each repeat, collective, N and size, loom-bench with
# LOOM_FLAT=0 (the message path the tuner chose before flat existed), loom-bench as built (the
# tuner may now pick flat) and Open MPI's bench/peers harness, interleaved so machine noise
# hits all three alike; the table is the median over repeats of each run's p50 (bench/peers'
# timing: a barrier, then one call, last rank in to last rank out), µs.
# Sizes are nccl-tests' (both harnesses): the vector (all-reduce), the gathered output
# (all-gather), the whole send buffer (all-to-all). For all-gather and all-to-all "8 B" means
# 8 bytes per block (the size is 8·N): 8 bytes in all would be less than one float32 per
# rank at N ≥ 4, which both harnesses round down to nothing.
# Usage: scripts/flat_bench.sh [BUILD_DIR] [REPEATS]   (BUILD_DIR default build; 5 repeats)
# Environment: FLAT_BENCH_COLLS (default "allreduce allgather alltoall"), FLAT_BENCH_SIZES
# (default "8 1024 16384 65536" for all-reduce, "8 1024" for the others; 8 as above).
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
colls=${FLAT_BENCH_COLLS:-allreduce allgather alltoall}
sizes_for() {
    if [ -n "${FLAT_BENCH_SIZES:-}" ]; then echo "$FLAT_BENCH_SIZES"
    elif [ "$1" = allreduce ]; then echo "8 1024 16384 65536"
    else echo "8 1024"; fi
}
# The bytes both harnesses get for a table size: 8 B per block for the copy collectives.
bytes_for() {
    if [ "$1" != allreduce ] && [ "$3" = 8 ]; then echo $((8 * $2)); else echo "$3"; fi
}
for rep in $(seq "$repeats"); do
  for coll in $colls; do
    for n in 2 4 8; do
        for size in $(sizes_for "$coll"); do
            b=$(bytes_for "$coll" "$n" "$size")
            for mode in before after; do
                rm -f "$tmp/loom.csv"
                flat=$([ "$mode" = before ] && echo 0 || echo 1)
                LOOM_FLAT=$flat timeout 300 "$run" -n "$n" --transport shm -- "$bench" "$coll" \
                    -b "$b" -e "$b" -n "$iters" -w 20 --timing barrier --outofplace -c 0 \
                    --csv "$tmp/loom.csv" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; continue; }
                python3 - "$tmp/loom.csv" "$mode" "$n" "$size" "$coll" >>"$raw" <<'EOF'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("inplace") != "1" and r["p50_us"]:
        print(f"{sys.argv[5]},{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{r['p50_us']},{r.get('algo', '')}")
EOF
            done
            if [ -n "$mpi" ]; then
                timeout 300 mpirun.openmpi "${as_root[@]}" --oversubscribe --bind-to none -np "$n" \
                    "$mpi" openmpi "$coll" "$b:$iters:20" 2>/dev/null |
                    awk -F, -v c="$coll" -v n="$n" -v s="$size" \
                        '$1 == "openmpi" { print c ",openmpi," n "," s "," $5 ",-" }' >>"$raw" || true
            fi
        done
    done
  done
done
python3 - "$raw" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
algo = {}
cells = []
for line in open(sys.argv[1]):
    coll, mode, n, b, p50, a = line.strip().split(",")
    rows[(coll, mode, int(n), int(b))].append(float(p50))
    if (coll, int(n), int(b)) not in cells:
        cells.append((coll, int(n), int(b)))
    if a and a != "-":
        algo[(coll, mode, int(n), int(b))] = a
def med(k):
    return statistics.median(rows[k]) if rows.get(k) else None
def f(x):
    return "–" if x is None else f"{x:.2f}"
print("| collective | N | size | before (LOOM_FLAT=0) µs | after µs | Open MPI µs | after ÷ before | after ÷ Open MPI |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for coll, n, b in cells:
    bef, aft, mpi = (med((coll, m, n, b)) for m in ("before", "after", "openmpi"))
    size = f"{b} B" if b < 1024 else f"{b // 1024} KiB"
    if coll != "allreduce" and b == 8:
        size = "8 B per block"
    r1 = f"{aft / bef:.2f}" if bef and aft else "–"
    r2 = f"{aft / mpi:.2f}" if mpi and aft else "–"
    print(f"| {coll} | {n} | {size} | {f(bef)} ({algo.get((coll, 'before', n, b), '?')}) | {f(aft)} "
          f"({algo.get((coll, 'after', n, b), '?')}) | {f(mpi)} | {r1} | {r2} |")
EOF
