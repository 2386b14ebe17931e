#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# In-network collectives through a loom-switch that listens on DPDK memif ports
# (dpdk:memif:NAME): four ranks (loomrun, the C API) reach it at the address it wrote to its
# ready file, each given a free memif interface id by the node (16 of them: each rank opens
# a link per communicator). A case passes when loomrun exits 0,
# every rank reported "0 failed" (results checked against the references, and rank 0 saw
# the node count contributions), and the node stops on SIGTERM. The node and every rank
# start their own DPDK EAL (drivers/dpdk's defaults: no hugepages, no NIC).
# Usage: run_inc_dpdk.sh LOOMRUN TEST_API_INC LOOM_SWITCH
set -u
loomrun=$1
program=$2
switch=$3
case_timeout=300
# shellcheck source=case_run.sh
. "$(dirname "$0")/case_run.sh"
spid=""
trap '[ -n "$spid" ] && kill -9 "$spid" 2>/dev/null; rm -rf "$work"' EXIT
export LOOM_TIMEOUT=20

listen="dpdk:memif:loom-inc-test-$$"
LOOM_DPDK_MEMIF_IDS=16 "$switch" --listen "$listen" --ready-file "$work/ready" --key-file "$work/key" \
    >"$work/switch.log" 2>&1 &
spid=$!
i=0
while [ ! -s "$work/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
addr=$(cat "$work/ready" 2>/dev/null)
[ "$addr" = "$listen" ] || fail_case "the node's address '$addr' is not '$listen'"
ticket=$("$switch" ticket --key-file "$work/key" --job run-inc-dpdk)
with="LOOM_SWITCH=$addr LOOM_INC_TICKET=$ticket"
case_run "$listen N=4" 4 --transport tcp -- "$program"
kill "$spid" 2>/dev/null
i=0
while kill -0 "$spid" 2>/dev/null && [ $i -lt 250 ]; do sleep 0.02; i=$((i + 1)); done
if kill -0 "$spid" 2>/dev/null; then
    fail_case "the node did not stop within 5 s of SIGTERM"
    kill -9 "$spid" 2>/dev/null
fi
wait "$spid" 2>/dev/null
spid=""
cat "$work/switch.log"

if [ "$failures" -ne 0 ]; then
    echo "run_inc_dpdk: $failures case(s) failed"
    exit 1
fi
echo "run_inc_dpdk: every case passed"
