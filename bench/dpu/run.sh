#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# loom-dpu's forwarding rate against the io-forward baseline, on the same memif ports in the
# same run: for each frame size, first loom-dpu (one node, --fabric ring:1, two host ports,
# --busy-poll) then `loom-dpu-forward iofwd` listen on the host ports of ranks 0 and 1, and
# `loom-dpu-forward gen` feeds one and drains the other for SECONDS. Builds nothing.
#
#   bench/dpu/run.sh [-t SECONDS] [BUILD_DIR]       (default: 3 s, build)
#
# Frame sizes: 102 B (the smallest reliable-protocol frame loom-dpu forwards: Ethernet
# header + 88-byte header; 64-byte frames are not loom frames) and the largest the ports
# carry (14 + LOOM_DPDK_MTU). Prints Mpps, Gbit/s and loom-dpu's share of the baseline.
set -euo pipefail

seconds=3
while getopts "t:" opt; do
    case $opt in
        t) seconds=$OPTARG ;;
        *) echo "run.sh: usage: run.sh [-t SECONDS] [BUILD_DIR]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
build=${1:-build}
dpu=$build/tools/loom-dpu/loom-dpu
fwd=$build/bench/dpu/loom-dpu-forward
for f in "$dpu" "$fwd"; do
    [ -x "$f" ] || { echo "run.sh: $f is not built (ninja -C $build ${f#"$build"/})" >&2; exit 2; }
done
export LOOM_CALIBRATE=off
mtu=${LOOM_DPDK_MTU:-9000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# rate NAME BYTES COMMAND...: starts the forwarder COMMAND (listening in $dir), waits for
# its ready file, runs the generator, stops the forwarder; prints "mpps gbps".
rate() {
    local name=$1 bytes=$2 dir pid line
    shift 2
    dir=$work/$name-$bytes
    mkdir -m 700 "$dir"
    "${@//@DIR@/$dir}" >"$dir/forwarder.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        [ -e "$dir/node-0.ready" ] && break
        sleep 0.05
    done
    line=$("$fwd" gen "$dir" "$bytes" "$seconds" 2>"$dir/gen.log" | grep '^frame_bytes=') || true
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [ -z "$line" ]; then
        echo "run.sh: $name at $bytes B gave no figure:" >&2
        tail -n 5 "$dir/gen.log" "$dir/forwarder.log" >&2
        echo "- -"
        return
    fi
    echo "$line" | sed 's/.*mpps=\([0-9.]*\) gbps=\([0-9.]*\).*/\1 \2/'
}

echo "# loom-dpu forwarding rate, one core, memif, --busy-poll; $seconds s per figure"
echo "# host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-8s %-10s %10s %10s %8s\n" bytes forwarder Mpps Gbit/s share
for bytes in 102 $((14 + mtu)); do
    read -r d_mpps d_gbps < <(rate dpu "$bytes" "$dpu" --node 0 --fabric ring:1 \
        --ranks-per-node 2 --busy-poll --dir @DIR@)
    read -r b_mpps b_gbps < <(rate iofwd "$bytes" "$fwd" iofwd @DIR@)
    share=$(awk -v a="$d_mpps" -v b="$b_mpps" 'BEGIN { if (b > 0) printf "%.0f %%", 100 * a / b; else print "-" }')
    printf "%-8s %-10s %10s %10s %8s\n" "$bytes" loom-dpu "$d_mpps" "$d_gbps" "$share"
    printf "%-8s %-10s %10s %10s %8s\n" "$bytes" io-forward "$b_mpps" "$b_gbps" "100 %"
done
