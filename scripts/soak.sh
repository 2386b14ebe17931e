#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak, as a benchmark: 10^6 small and 10^4 large all-reduces at N = 4 over shm and tcp,
# and 10^5 in-network ones through loom-switch, each on one communicator. Prints, per run,
# the time per call, the resident set and the open descriptors (maximum over ranks) in a
# window after warm-up and in the last window, and their growth. Every result is checked.
# About 5 minutes on 2 cores. Usage: scripts/soak.sh [BUILD_DIR] [SCALE]
# (SCALE divides every call count, e.g. 100 for a quick look; packages: scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build-bench}
scale=${2:-1}
if [ ! -f "$build_dir/build.ninja" ]; then
    meson setup "$build_dir" --buildtype=release >/dev/null
fi
ninja -C "$build_dir" tools/loomrun/loomrun tools/loom-switch/loom-switch \
    bench/soak/loom-soak >/dev/null
loomrun=$build_dir/tools/loomrun/loomrun
soak=$build_dir/bench/soak/loom-soak
out_dir=results/soak
mkdir -p "$out_dir"

# run NAME CALLS BYTES LOOMRUN-ARGS...: one job; its output to $out_dir/NAME.txt.
run() {
    local name=$1 calls=$(($2 / scale)) bytes=$3
    shift 3
    echo "== $name: $calls all-reduces of $bytes B" | tee "$out_dir/$name.txt"
    if ! "$loomrun" -n 4 --timeout 1200 "$@" -- "$soak" --calls "$calls" --bytes "$bytes" \
        >>"$out_dir/$name.txt" 2>&1; then
        tail -n 5 "$out_dir/$name.txt" >&2
        echo "loom-soak: $name failed; output in $out_dir/$name.txt" >&2
        exit 1
    fi
    sed -n '2,$p' "$out_dir/$name.txt"
}
run shm-small 1000000 8 --transport shm
run shm-large 10000 4194304 --transport shm
run tcp-small 1000000 8 --transport tcp
run tcp-large 10000 4194304 --transport tcp
LOOM_ALGO=allreduce=inc run inc-small 100000 8 --switch
