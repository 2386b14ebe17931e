#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# dor-relay all-to-all through the forwarder on an emulated lattice (loomrun --fabric), for one
# or more builds side by side: the time per call (loom-bench, out of place) under both tie
# rules. The per-link bytes of one call against the routes' loads are the api_fabric_* tests'
# (tests/api/fabric_checks.cc, through loom_comm_link_stats).
#
#   bench/relay/run.sh [-s SHAPE] [-b BYTES] [-n ITERS] BUILD_DIR [BUILD_DIR ...]
#
# BUILD_DIR is a Meson build directory of loom (e.g. a build of the lockstep version and one of
# the asynchronous one). Prints one line per build and tie rule.
set -euo pipefail

shape=torus:4x4 bytes=1M iters=5
while getopts "s:b:n:" opt; do
    case $opt in
        s) shape=$OPTARG ;;
        b) bytes=$OPTARG ;;
        n) iters=$OPTARG ;;
        *) echo "run.sh: usage: run.sh [-s SHAPE] [-b BYTES] [-n ITERS] BUILD_DIR..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
    echo "run.sh: name at least one build directory" >&2
    exit 2
fi

# The rank count is the shape's size (product of the dimensions after the colon).
ranks=$(echo "${shape#*:}" | tr 'x' '\n' | awk 'BEGIN { n = 1 } { n *= $1 } END { print n }')
export LOOM_CALIBRATE=off

printf '%-40s %-14s %14s\n' build ties "time (us)"
for build in "$@"; do
    for ties in toward-plus source-parity; do
        log=$(mktemp)
        LOOM_ROUTE_TIES=$ties "$build/tools/loomrun/loomrun" -n "$ranks" --fabric "$shape" \
            -- "$build/tools/loom-bench/loom-bench" alltoall --algo dor-relay \
            -b "$bytes" -e "$bytes" -n "$iters" -w 1 >"$log" 2>&1 || {
            echo "run.sh: $build ($ties) failed; its output: $log" >&2
            continue
        }
        # loom-bench's row: the out-of-place time is the 6th column after the rank prefix.
        time_us=$(grep -E '^\[0\] +[0-9]+ ' "$log" | awk '{ print $7 }' | tail -1)
        printf '%-40s %-14s %14s\n' "$build" "$ties" "${time_us:--}"
        rm -f "$log"
    done
done
