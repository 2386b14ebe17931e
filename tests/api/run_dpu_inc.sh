#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# In-network aggregation inside the DPUs (loomrun --dpu --inc: each loom-dpu is a leaf
# aggregation node for its node's ranks, node 0's DPU the root too, all on the router's poll
# loop), through a 2x2x2 DPU torus, every process a DPDK one (no hugepages):
#   exact        test_api_inc: all-reduce, reduce and broadcast with algorithm inc (asked
#                explicitly: a fallback to software would fail the call) over every dtype and
#                op the node reduces, counts 0..65539 (over one 8 KiB packet), in place or
#                not, four calls in flight; the software algorithms (int8) go through the DPU
#                routers. The DPUs' dpu-agg counters must show it: every leaf took its rank's
#                contributions and forwarded partial sums, the root summed them.
#   loss         the same under 1 % and 10 % of data packets dropped inside every DPU's nodes
#                (--drop) plus 2 % handled twice (--dup), and as much on the ranks' own links
#                (LOOM_INC_DROP/DUP/REORDER): still exact, the DPUs' injected drops counted.
#   dpu-killed   node 5's DPU SIGKILLed during inc all-reduces: loomrun fails naming it, and
#                every rank's call fails at once, no wrong sum: rank 5 because its node is
#                gone, the others because the root breaks the group (leaf 5's link closed
#                without leaving) and its nack comes down through their leaves, naming the
#                member gone. The deadline (LOOM_TIMEOUT=30) is past test_api_inc's 20 s
#                bound on a failure, so a rank that only timed out fails the case.
# Usage: run_dpu_inc.sh LOOMRUN TEST_API_INC
set -u
loomrun=$1
program=$2
case_timeout=500
# shellcheck source=case_run.sh
. "$(dirname "$0")/case_run.sh"
trap 'rm -rf "$work"' EXIT
export LOOM_CALIBRATE=off
export LOOM_TIMEOUT=30

# agg FIELD NODE ROLE: FIELD of the dpu-agg line of NODE's ROLE (leaf, root) in $work/out.
agg() {
    sed -n "s/^dpu-agg node=$2 role=$3 .* $1=\([0-9]*\).*/\1/p" "$work/out" | head -n 1
}

# check_through_dpus NAME: the contributions went through every DPU's leaf and node 0's root.
check_through_dpus() {
    grep "^dpu-agg" "$work/out"
    for n in 0 1 2 3 4 5 6 7; do
        c=$(agg contributions "$n" leaf)
        f=$(agg forwarded "$n" leaf)
        [ "${c:-0}" -gt 0 ] || fail_case "$1: node $n's leaf took ${c:-no} contributions"
        [ "${f:-0}" -gt 0 ] || fail_case "$1: node $n's leaf forwarded ${f:-no} partial sums"
    done
    c=$(agg contributions 0 root)
    r=$(agg results 0 root)
    [ "${c:-0}" -ge 8 ] || fail_case "$1: the root took ${c:-no} contributions"
    [ "${r:-0}" -gt 0 ] || fail_case "$1: the root completed ${r:-no} results"
}

# 16 processes (8 ranks, 8 DPUs) on a small shared host: the reliable protocol's silence
# timeout (5 s) is raised for the cases that must pass, not for the DPU killed.
with="LOOM_REL_PEER_TIMEOUT=20"
case_run "exact torus:2x2x2 N=8" 8 --dpu --inc --fabric torus:2x2x2 -- "$program"
check_through_dpus exact

for p in 0.01 0.1; do
    with="LOOM_REL_PEER_TIMEOUT=20 LOOM_INC_DROP=$p LOOM_INC_DUP=0.02 LOOM_INC_REORDER=0.02"
    case_run "loss $p torus:2x2x2 N=8" 8 --dpu --inc --fabric torus:2x2x2 \
        --dpu-arg=--drop --dpu-arg="$p" --dpu-arg=--dup --dpu-arg=0.02 --dpu-arg=--seed \
        --dpu-arg=7 -- "$program"
    check_through_dpus "loss $p"
    dropped=$(sed -n "s/^dpu-agg .* drops_injected=\([0-9]*\).*/\1/p" "$work/out" |
        awk '{ s += $1 } END { print s + 0 }')
    duped=$(sed -n "s/^dpu-agg .* dups_injected=\([0-9]*\).*/\1/p" "$work/out" |
        awk '{ s += $1 } END { print s + 0 }')
    echo "loss $p: the DPUs dropped $dropped and duplicated $duped data packets"
    [ "$dropped" -gt 0 ] || fail_case "loss $p: no drop injected in the DPUs"
    [ "$duped" -gt 0 ] || fail_case "loss $p: no duplicate injected in the DPUs"
done
with=""

echo "== dpu-killed (inc) torus:2x2x2 node 5"
start=$(date +%s)
LOOM_TIMEOUT=30 "$loomrun" -n 8 --timeout 120 --dpu --inc --fabric torus:2x2x2 -- "$program" \
    --until-failure >"$work/kill" 2>&1 &
lr=$!
# node 5's loom-dpu (a child of this loomrun), killed once its leaf has summed contributions
# (its counters, asked for with SIGUSR1, land in $work/kill).
i=0
dpu=""
while [ -z "$dpu" ] && [ $i -lt 1500 ]; do
    dpu=$(pgrep -P "$lr" -f -- "loom-dpu --node 5 " | head -n 1)
    sleep 0.02
    i=$((i + 1))
done
# Its handlers are set once its ready file exists (in its --dir).
dir=$([ -n "$dpu" ] && tr '\0' '\n' <"/proc/$dpu/cmdline" | sed -n '/^--dir$/{n;p;}')
i=0
while [ -n "$dpu" ] && [ ! -e "$dir/node-5.ready" ] && [ $i -lt 1500 ]; do
    sleep 0.02
    i=$((i + 1))
done
i=0
while [ -n "$dpu" ] && [ $i -lt 120 ] &&
    ! grep -q "^dpu-agg node=5 role=leaf .* contributions=[1-9]" "$work/kill"; do
    kill -USR1 "$dpu" 2>/dev/null
    sleep 0.5
    i=$((i + 1))
done
[ -n "$dpu" ] && kill -9 "$dpu"
wait "$lr"
rc=$?
took=$(($(date +%s) - start))
grep -v "^dpu-\|^loom-dpu node" "$work/kill"
echo "dpu-killed (inc): loomrun exit $rc after $took s"
[ -n "$dpu" ] || fail_case "dpu-killed (inc): node 5's loom-dpu was not found"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    fail_case "dpu-killed (inc): loomrun exit $rc (expected a failure, not 0 or a timeout)"
fi
grep -q "the DPU of node 5 (loom-dpu pid [0-9]*) was killed by SIGKILL" "$work/kill" ||
    fail_case "dpu-killed (inc): loomrun did not name the DPU of node 5"
# Every rank's call fails, in time (test_api_inc checks under 20 s), no wrong sum. Rank 5
# names its own node, gone; the ranks whose nack came first name the root and its member 5;
# the others may hear first from a rank that failed (the engine's failure notice: "rank R
# reported peer failure") and fail by that, as quickly.
failed=$(grep -c "^\[[0-9]*\] rank [0-9]*: call [0-9]* failed after" "$work/kill")
named=$(grep -c "^\[[0-9]*\] rank [0-9]*: call [0-9]* failed after .*aggregation node" "$work/kill")
echo "dpu-killed (inc): $failed of 8 ranks saw their call fail, $named naming the aggregation node"
[ "$failed" -eq 8 ] || fail_case "dpu-killed (inc): $failed of 8 ranks returned an error"
[ "$named" -ge 2 ] || fail_case "dpu-killed (inc): $named ranks named the aggregation node"
grep -q "^\[[0-9]*\] rank [0-9]*: call [0-9]* failed after .*member 5 .* is gone" "$work/kill" ||
    fail_case "dpu-killed (inc): no rank heard the root's nack naming its member 5"
if grep -q "wrong sum\|the failure took" "$work/kill"; then
    fail_case "dpu-killed (inc): a wrong sum, or a failure past the deadline"
fi
[ "$took" -lt 110 ] || fail_case "dpu-killed (inc): took $took s"

if [ "$failures" -ne 0 ]; then
    echo "run_dpu_inc: $failures case(s) failed"
    exit 1
fi
echo "run_dpu_inc: all cases passed"
