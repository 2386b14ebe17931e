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
export LOOM_DPDK_MEMIF_IDS=16  # the node's; the ranks connect without ids
start_node "$listen" run-inc-dpdk
[ "$addr" = "$listen" ] || fail_case "the node's address '$addr' is not '$listen'"
case_run "$listen N=4" 4 --transport tcp -- "$program"
stop_node "$listen"

if [ "$failures" -ne 0 ]; then
    echo "run_inc_dpdk: $failures case(s) failed"
    exit 1
fi
echo "run_inc_dpdk: every case passed"
