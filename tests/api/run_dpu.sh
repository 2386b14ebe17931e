#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Ranks attached to their own DPU (loomrun --dpu: one tools/loom-dpu per node, wired as the
# fabric, the ranks over transport dpu), with every process a DPDK one (no hugepages):
#   sweep        the C-API sweep (test_api_multiproc --from-env) through a 2x2x2 DPU torus;
#   route        rank 0 sends 32 MiB to rank 7 (node (0,0,0) to (1,1,1), three hops):
#                the DPUs' per-link counters must show the data on exactly the
#                dimension-ordered route 0 → 4 → 6 → 7 (fabric/routing, toward-plus ties)
#                and no such traffic on any other link in that direction;
#   dateline     rank 3 sends 32 MiB to rank 1 on a 4x4 DPU torus (16 DPUs): the route
#                3 → 0 → 1 crosses the ring's wraparound, so both hops carry the data on
#                VC1 (the dateline rule: VC1 from the crossing hop on);
#   dpu-killed   a DPU SIGKILLed during all-reduces: loomrun fails naming that DPU, every
#                rank returns an error and prints it, all within the deadline (no hang).
# Usage: run_dpu.sh LOOMRUN TEST_API_MULTIPROC DPU_PROBE
set -u
loomrun=$1
program=$2
probe=$3
case_timeout=400
# shellcheck source=case_run.sh
. "$(dirname "$0")/case_run.sh"
trap 'rm -rf "$work"' EXIT
export LOOM_CALIBRATE=off

# The sweep checks results, not how fast a death is seen: 16 polling processes on a shared
# 2-core machine can leave a hop without its turn for seconds, so silence fails a peer only
# after 20 s here (the dpu-killed case keeps the default).
with="LOOM_REL_PEER_TIMEOUT=20"
case_run "sweep torus:2x2x2 N=8" 8 --dpu --fabric torus:2x2x2 -- "$program" --from-env
with=""

# route: frames_out of the torus port from node A to node B (the dpu-link line of A).
# probe_p2p NAME N FABRIC SRC DST: 32 MiB from rank SRC to DST through N DPUs, every rank's
# checks passing; the DPUs' counters land in $work/NAME.
probe_p2p() {
    echo "== $1 $3 $4 -> $5"
    "$loomrun" -n "$2" --timeout 120 --dpu --fabric "$3" -- "$probe" p2p "$4" "$5" 32 \
        >"$work/$1" 2>&1
    local rc=$? passed
    passed=$(grep -c " of $2: [0-9]* checks, 0 failed" "$work/$1")
    if [ "$rc" -ne 0 ] || [ "$passed" -ne "$2" ]; then
        cat "$work/$1"
        fail_case "$1 (loomrun exit $rc, $passed of $2 ranks passed)"
    fi
}

probe_p2p route 8 torus:2x2x2 0 7
# counter FILE FIELD A B: FIELD of the dpu-link line of node A's torus port toward node B.
counter() {
    sed -n "s/^dpu-link node=$3 port=[0-9]* to_node=$4 .* $2=\([0-9]*\).*/\1/p" "$1" | head -n 1
}
frames() { counter "$work/route" frames_out "$1" "$2"; }
grep "^dpu-link" "$work/route" | grep -v "to_node=-1"
# 32 MiB in frames of at most 9000 bytes: more than 3700 data frames on each hop.
for hop in "0 4" "4 6" "6 7"; do
    # shellcheck disable=SC2086 # two words: the hop's nodes
    n=$(frames $hop)
    echo "route hop $hop: ${n:-none} frames"
    [ "${n:-0}" -ge 3700 ] || fail_case "route: hop $hop carried ${n:-no} frames, not the data"
done
# Every other directed link: at most the handshakes, acks and clear-to-sends.
for from in 0 1 2 3 4 5 6 7; do
    for to in 0 1 2 3 4 5 6 7; do
        case "$from $to" in "0 4" | "4 6" | "6 7") continue ;; esac
        n=$(frames "$from" "$to")
        [ -z "$n" ] && continue
        [ "$n" -lt 1000 ] || fail_case "route: link $from -> $to is off the route but carried $n frames"
    done
done

probe_p2p dateline 16 torus:4x4 3 1
for hop in "3 0" "0 1"; do
    # shellcheck disable=SC2086 # two words: the hop's nodes
    n=$(counter "$work/dateline" vc1_out $hop)
    echo "dateline hop $hop: ${n:-none} frames on VC1"
    [ "${n:-0}" -ge 3700 ] || fail_case "dateline: hop $hop carried ${n:-no} frames on VC1"
done

echo "== dpu-killed torus:2x2x2 node 5"
start=$(date +%s)
"$loomrun" -n 8 --timeout 120 --dpu --fabric torus:2x2x2 -- "$probe" kill 5 >"$work/kill" 2>&1
rc=$?
took=$(($(date +%s) - start))
grep -v "^dpu-\|^loom-dpu node" "$work/kill"
echo "dpu-killed: loomrun exit $rc after $took s"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    fail_case "dpu-killed: loomrun exit $rc (expected a failure, not 0 or a timeout)"
fi
grep -q "the DPU of node 5 (loom-dpu pid [0-9]*) was killed by SIGKILL" "$work/kill" ||
    fail_case "dpu-killed: loomrun did not name the DPU of node 5"
errors=$(grep -c "^\[[0-9]*\] rank [0-9]*: error after the DPU's death" "$work/kill")
[ "$errors" -eq 8 ] || fail_case "dpu-killed: $errors of 8 ranks returned an error"
[ "$took" -lt 90 ] || fail_case "dpu-killed: took $took s"

if [ "$failures" -ne 0 ]; then
    echo "run_dpu: $failures case(s) failed"
    exit 1
fi
echo "run_dpu: all cases passed"
