#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# In-network collectives through a loom-switch that listens over libfabric (ofi:): the node
# on udp (udp;ofi_rxd) and on tcp;ofi_rxm, four ranks (loomrun, the C API) reaching it at the
# address it wrote to its ready file. A case passes when loomrun exits 0, every rank reported
# "0 failed" (results checked against the references, and rank 0 saw the node count
# contributions: the calls went through the network), and the ready address names the
# provider asked for.
# Usage: run_inc_ofi.sh LOOMRUN TEST_API_INC LOOM_SWITCH
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

for provider in "udp" "tcp;ofi_rxm"; do
    start_node "ofi:$provider" run-inc-ofi
    case "$addr" in
    "ofi:$provider"*/*) ;;
    *) fail_case "ofi:$provider: the node's address '$addr' does not name the provider" ;;
    esac
    case_run "ofi:$provider N=4" 4 --transport tcp -- "$program"
    stop_node "ofi:$provider"
done

if [ "$failures" -ne 0 ]; then
    echo "run_inc_ofi: $failures case(s) failed"
    exit 1
fi
echo "run_inc_ofi: every case passed"
