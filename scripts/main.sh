#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom's main job on the embedded default: no hardware, no configuration (docs/main-job.md).
# Builds, then
#  1. measures: 8 local ranks on an emulated 2x2x2 torus (loomrun --fabric: every rank
#     linked to its 6 neighbours over shared memory, traffic forwarded hop by hop) plus one
#     loom-switch aggregation node (--switch); loom-bench runs a checked all-reduce from
#     8 B to 16 MiB with every applicable algorithm (dims, inc, ring, …), printing measured
#     beside predicted times, the tuner's choice and the bytes each rank sent, and a plot;
#  2. predicts the same comparison at 512 ranks (torus:8x8x8) and 4096 ranks
#     (torus:16x16x16) with the simulator running the very same schedules beside the
#     closed forms (loom-sim compare), and what the tuner would choose there (explain).
# Every command is printed before it runs, as it can be re-run from the repository root.
# Ends with a summary: the fastest algorithm per size, the tuner's choice, in-network
# against the best software algorithm, and where the full output is (results/main/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
out=results/main
mkdir -p "$out"
loomrun=build/tools/loomrun/loomrun
bench=build/tools/loom-bench/loom-bench
sim=build/tools/loom-sim/loom-sim

# A command as it can be pasted back into a shell: words of plain characters as they are,
# the others quoted.
shown() {
    local word words=()
    for word in "$@"; do
        if [[ $word =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then
            words+=("$word")
        else
            words+=("$(printf '%q' "$word")")
        fi
    done
    echo "\$ ${words[*]}"
}

# Prints a command, then runs it.
run() {
    shown "$@"
    "$@"
}

echo "== measured: all-reduce, 8 ranks on torus:2x2x2 over shm + one loom-switch"
measured=(
    "$loomrun" -n 8 --fabric torus:2x2x2 --switch --timeout 300 --
    "$bench" allreduce -b 8 -e 16M -f 8 -n 8 -w 2 -c --algo all
    --csv "$out/allreduce-torus2x2x2.csv" --plot "$out/allreduce-torus2x2x2.png"
)
echo "$(shown "${measured[@]}") >$out/measured.txt 2>&1"
if ! "${measured[@]}" >"$out/measured.txt" 2>&1; then
    cat "$out/measured.txt"
    exit 1
fi
# Rank 0's table; every rank's output and the switch's counters stay in the file.
grep -v -E '^\[[1-7]\]|^[a-z_]+ [0-9]+$' "$out/measured.txt" || true
echo "   (every rank's output and the loom-switch's counters: $out/measured.txt)"

# The aggregation node's model: a switch ASIC adds 0.15 µs and reduces at line rate.
model=(--alpha 1us --bw 25GB/s --alpha-switch 0.15us)
echo
echo "== predicted: 512 ranks, torus:8x8x8 (closed form and simulation of each schedule)"
run "$sim" compare --collective allreduce --topology torus:8x8x8 --bytes 8,64K,4M,64M \
    --algorithm dims,inc,dbt,rabenseifner,ring "${model[@]}" --plot "$out/predicted-512.png" |
    tee "$out/predicted-512.txt"
echo
echo "== predicted: 4096 ranks, torus:16x16x16"
run "$sim" compare --collective allreduce --topology torus:16x16x16 --bytes 8,64K,4M,64M \
    --algorithm dims,inc,dbt "${model[@]}" --plot "$out/predicted-4096.png" |
    tee "$out/predicted-4096.txt"
echo
echo "== the tuner at 4096 ranks with an aggregation node (loom-sim explain)"
run "$sim" explain --collective allreduce --ranks 4096 --topology torus:16x16x16 \
    --bytes 8,64M --switch "${model[@]}" | tee "$out/explain-4096.txt"

echo
echo "== summary"
python3 scripts/main_summary.py "$out"
