#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plots of docs/performance.md and docs/main-job.md, drawn with gnuplot from the result
# data committed under docs/perf/ (so they can be redrawn, and checked, without a rerun):
#   allreduce-peers.svg   all-reduce time against size, loom and the best peer, N = 2, 4, 8
#   main-job-allreduce.svg the main job's all-reduce, p50 against size, one line per algorithm
# Every plot has a title, axis labels with units and a legend.
# Usage: scripts/perf_plots.sh [DIR] (default docs/perf). Exit status 2 without gnuplot.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/docs/perf}
if ! command -v gnuplot >/dev/null; then
    echo "perf_plots.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2
    exit 2
fi

style='set terminal svg size 800,500 dynamic enhanced font "sans,12" background "white"
set logscale xy
set grid
set key top left box opaque
set xtics ("8 B" 8, "1 KiB" 1024, "64 KiB" 65536, "1 MiB" 1048576, "16 MiB" 16777216, "64 MiB" 67108864)
set format y "%g"
set xlabel "message size per rank (bytes)"
set ylabel "time per call (µs)"'

gnuplot <<GP
$style
set output "$dir/allreduce-peers.svg"
set title "All-reduce over shared memory, float32 sum: loom against the best of Open MPI, MPICH and Gloo (2-core VM)"
plot for [i=0:2] "$dir/allreduce-peers.dat" index i using 2:4 with linespoints lw 2 pt 7 lc i+1 \
         title sprintf("loom, N = %d", 2**(i+1)), \
     for [i=0:2] "$dir/allreduce-peers.dat" index i using 2:3 with linespoints lw 1 dt 2 pt 6 lc i+1 \
         title sprintf("best peer, N = %d", 2**(i+1))
GP

# The main job's CSV: one line per algorithm, columns found by name.
csv=$dir/main-job-allreduce.csv
algos=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i; next} {print $col["algo"]}' "$csv" | awk '!seen[$0]++')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plots=()
for a in $algos; do
    awk -F, -v a="$a" 'NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i; next}
        $col["algo"] == a {print $col["bytes"], $col["p50_us"]}' "$csv" >"$tmp/$a.dat"
    plots+=("\"$tmp/$a.dat\" using 1:2 with linespoints lw 2 title \"$a\"")
done
gnuplot <<GP
$style
set output "$dir/main-job-allreduce.svg"
set title "Main job: all-reduce on 8 ranks, torus:2x2x2 over shm + one loom-switch (p50, 2-core VM)"
plot $(IFS=,; echo "${plots[*]}")
GP
echo "plots: $dir/allreduce-peers.svg $dir/main-job-allreduce.svg"
