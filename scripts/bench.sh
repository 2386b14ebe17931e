#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom's collective performance on this machine, nccl-tests style (tools/loom-bench):
# allreduce latency (8 B) with 2 ranks and bus bandwidth (64 MiB) with 2 and 4 ranks, over
# shm and tcp, next to the machine's memcpy bandwidth. Builds loom-bench and loomrun if
# needed (release build in build-bench), keeps every run's full output under
# results/bench/, and ends with a short summary. About half a minute on 2 cores.
# Usage: scripts/bench.sh [BUILD_DIR]      (packages: scripts/setup.sh installs them)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build-bench}
out_dir=results/bench
if [ ! -f "$build_dir/build.ninja" ]; then
    meson setup "$build_dir" --buildtype=release >/dev/null
fi
if ! build_log=$(ninja -C "$build_dir" tools/loomrun/loomrun tools/loom-bench/loom-bench 2>&1); then
    echo "$build_log" | tail -n 30 >&2
    exit 1
fi
loomrun=$build_dir/tools/loomrun/loomrun
bench=$build_dir/tools/loom-bench/loom-bench
mkdir -p "$out_dir"

# run NAME N TRANSPORT BENCH-ARGS...: one job; its output to $out_dir/NAME.txt.
run() {
    local name=$1 n=$2 transport=$3
    shift 3
    if ! "$loomrun" -n "$n" --transport "$transport" --timeout 60 -- \
        "$bench" allreduce "$@" >"$out_dir/$name.txt" 2>&1; then
        echo "loom-bench: $name failed; output in $out_dir/$name.txt" >&2
        tail -n 5 "$out_dir/$name.txt" >&2
        exit 1
    fi
}
# field NAME COLUMN: a column of rank 0's (single) table row, nccl-tests' columns: 7 time
# (us), 9 busbw (GB/s) of the out-of-place half (the one measured here).
field() {
    awk -v col="$2" '$1 == "[0]" && $2 ~ /^[0-9]+$/ { v = $(col) } END { print v }' \
        "$out_dir/$1.txt"
}

latency=(-b 8 -e 8 -n 1000 -w 100 --outofplace)
bandwidth=(-b 64M -e 64M -n 20 -w 3 --outofplace)
start=$SECONDS
for t in shm tcp; do
    run "lat_n2_$t" 2 "$t" "${latency[@]}"
    run "bw_n2_$t" 2 "$t" "${bandwidth[@]}"
    run "bw_n4_$t" 4 "$t" "${bandwidth[@]}"
done

memcpy=$(sed -n 's/^\[0\] # memcpy bandwidth .*: \([0-9.]*\) GB\/s$/\1/p' "$out_dir/bw_n2_shm.txt")
echo "loom-bench allreduce on $(nproc) cores; memcpy (64 MiB, best of 10): $memcpy GB/s"
printf '  %-34s %10s %10s\n' "" shm tcp
printf '  %-34s %10s %10s\n' "8 B latency, N=2 (us)" "$(field lat_n2_shm 7)" "$(field lat_n2_tcp 7)"
printf '  %-34s %10s %10s\n' "64 MiB busbw, N=2 (GB/s)" "$(field bw_n2_shm 9)" "$(field bw_n2_tcp 9)"
printf '  %-34s %10s %10s\n' "64 MiB busbw, N=4 (GB/s)" "$(field bw_n4_shm 9)" "$(field bw_n4_tcp 9)"
echo "  (busbw = algbw x 2(N-1)/N; full tables in $out_dir/; $((SECONDS - start)) s)"
