#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# In-network collectives end to end: real loom-switch processes, real ranks (loomrun), the
# C API. Each case prints the ranks' summaries; a case passes when loomrun exits 0 and every
# rank reported "0 failed".
# Usage: run_inc.sh LOOMRUN TEST_API_INC LOOM_SWITCH
set -u
loomrun=$1
program=$2
switch=$3
case_timeout=300
# shellcheck source=case_run.sh
. "$(dirname "$0")/case_run.sh"
pids=""
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
export LOOM_TIMEOUT=20

# Starts a loom-switch with extra flags; sets $addr and $spid.
start_switch() {
    listen=$1
    shift
    rm -f "$work/ready"
    "$switch" --listen "$listen" --ready-file "$work/ready" --key-file "$work/key" "$@" \
        >"$work/switch.log" 2>&1 &
    spid=$!
    pids="$pids $spid"
    i=0
    while [ ! -s "$work/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
    addr=$(cat "$work/ready")
    # What an operator hands the ranks of a job at a node of their own.
    ticket=$("$switch" ticket --key-file "$work/key" --job run-inc)
}
stop_switch() {
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    cat "$work/switch.log"
}

# loomrun --switch: one node for every rank, N = 1..9 over tcp links, N = 4 over shm.
for n in 1 2 3 4 5 6 7 8 9; do
    case_run "flat N=$n tcp" "$n" --switch --transport tcp -- "$program"
done
case_run "flat N=4 shm, up to 64 MiB" 4 --switch --transport shm -- "$program" --full

# A two-level tree: two leaf switches under a root, two ranks on each leaf.
cat >"$work/tree.json" <<'JSON'
{"format": "loom-fabric", "version": 1,
 "nodes": [{"id": "h0", "kind": "endpoint", "rank": 0}, {"id": "h1", "kind": "endpoint", "rank": 1},
           {"id": "h2", "kind": "endpoint", "rank": 2}, {"id": "h3", "kind": "endpoint", "rank": 3},
           {"id": "leaf0", "kind": "switch", "in_network": true, "parent": "spine"},
           {"id": "leaf1", "kind": "switch", "in_network": true, "parent": "spine"},
           {"id": "spine", "kind": "switch", "in_network": true}],
 "links": [{"a": "h0", "b": "leaf0", "class": "net", "alpha": 1e-6, "bw": 25e9}, {"a": "h1", "b": "leaf0", "class": "net", "alpha": 1e-6, "bw": 25e9},
           {"a": "h2", "b": "leaf1", "class": "net", "alpha": 1e-6, "bw": 25e9}, {"a": "h3", "b": "leaf1", "class": "net", "alpha": 1e-6, "bw": 25e9},
           {"a": "leaf0", "b": "spine", "class": "net", "alpha": 1e-6, "bw": 25e9}, {"a": "leaf1", "b": "spine", "class": "net", "alpha": 1e-6, "bw": 25e9}]}
JSON
case_run "two-level tree N=4 tcp" 4 --switch --fabric "$work/tree.json" --transport tcp -- "$program"

# Loss: 1% and 10% of the ranks' packets dropped (and some duplicated and reordered) on
# their links, and as much inside the switch.
for p in 0.01 0.1; do
    start_switch tcp:127.0.0.1:0 --drop "$p" --dup 0.02 --seed 7
    with="LOOM_SWITCH=$addr LOOM_INC_TICKET=$ticket LOOM_INC_DROP=$p LOOM_INC_DUP=0.02 LOOM_INC_REORDER=0.02"
    case_run "loss $p N=4" 4 --transport tcp -- "$program"
    stop_switch
done

# A node without slots for the job: an explicit inc fails on every rank, the tuner runs
# software algorithms with exact results, nothing sent.
start_switch tcp:127.0.0.1:0 --job-quota 2
with="LOOM_SWITCH=$addr LOOM_INC_TICKET=$ticket LOOM_INC_SLOTS=8"
case_run "refused N=3 (fallback)" 3 --transport tcp -- "$program" --expect fallback
stop_switch

# The switch killed mid-collective, many times (tcp and shm nodes, at different moments
# after the ranks joined): every rank's call fails within its timeout naming the node; no
# wrong result.
kills=${RUN_INC_KILLS:-20}
k=0
while [ "$k" -lt "$kills" ]; do
    if [ $((k % 2)) -eq 0 ]; then listen=tcp:127.0.0.1:0; else listen="shm:run-inc-$$-$k"; fi
    start_switch "$listen"
    (
        i=0
        while [ $i -lt 1000 ] && ! "$switch" --stats "$addr" 2>/dev/null | grep -q '^groups 1$'; do
            sleep 0.01
            i=$((i + 1))
        done
        sleep "0.$((k % 4))5"
        kill -9 "$spid"
    ) &
    killer=$!
    with="LOOM_SWITCH=$addr LOOM_INC_TICKET=$ticket"
    case_run "switch killed N=4 (trial $k, $listen)" 4 --transport tcp -- "$program" --until-failure
    wait "$killer" 2>/dev/null
    wait "$spid" 2>/dev/null
    k=$((k + 1))
done

if [ "$failures" -ne 0 ]; then
    echo "run_inc: $failures case(s) failed"
    exit 1
fi
echo "run_inc: every case passed"
