#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# In-network all-reduce against the software algorithms, measured on this machine and
# predicted at scale.
#  1. measured: for N in $INC_BENCH_RANKS (default 2 4 8), loomrun --switch starts one
#     loom-switch and N ranks over tcp links to it; loom-bench runs a checked all-reduce from
#     8 B to 64 MiB with --algo inc, ring and dbt (the software ones over shm between the
#     ranks, as a node would run them), and the rows are collected into one table.
#  2. predicted: scripts/inc_predictions.sh (the simulator on a switch fabric, α = 0.5 µs,
#     α_switch = 0.15 µs, BW = 50 GB/s, N = 8, 64, 512, with the crossover sizes).
# Usage: scripts/inc_bench.sh [BUILD_DIR]   (default build; scripts/setup.sh builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/tools/loom-switch/loom-switch" ] || scripts/setup.sh "$build"
ranks=${INC_BENCH_RANKS:-2 4 8}
iters=${INC_BENCH_ITERS:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for n in $ranks; do
    for algo in inc ring dbt; do
        "$build/tools/loomrun/loomrun" -n "$n" --switch --transport shm --timeout 600 -- \
            "$build/tools/loom-bench/loom-bench" allreduce -b 8 -e 64M -f 2 -n "$iters" -w 1 \
            -c --outofplace --algo "$algo" 2>&1 |
            awk -v n="$n" -v algo="$algo" '$1 ~ /^\[0\]$/ && $2 ~ /^[0-9]+$/ {
                print n, algo, $2, $0 }' >>"$out"
    done
done
echo "== measured on this machine: all-reduce float32 sum, time per call (µs), rank 0's row"
echo "   (inc: one loom-switch process; ring, dbt: shm between the ranks)"
# Rows: N algo size [0] size count type redop root time …: one line per (N, size); $10 is
# the out-of-place time, nccl-tests' 6th column.
sort -k1,1n -k3,3n "$out" | awk '
    function flush() {
        if (key == "") return
        best = t["ring"] < t["dbt"] ? t["ring"] : t["dbt"]
        printf "%3d %10d %14s %14s %14s  %.2f\n", n, size, t["inc"], t["ring"], t["dbt"],
               (best > 0 ? t["inc"] / best : 0)
    }
    BEGIN { printf "%3s %10s %14s %14s %14s  %s\n", "N", "bytes", "inc", "ring", "dbt", "inc/best" }
    { k = $1 " " $3
      if (k != key) { flush(); key = k; n = $1; size = $3; delete t }
      t[$2] = $10 }
    END { flush() }'
echo
if [ -x scripts/inc_predictions.sh ]; then
    scripts/inc_predictions.sh "$build"
fi
