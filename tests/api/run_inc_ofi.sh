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
    rm -f "$work/ready"
    "$switch" --listen "ofi:$provider" --ready-file "$work/ready" --key-file "$work/key" \
        >"$work/switch.log" 2>&1 &
    spid=$!
    i=0
    while [ ! -s "$work/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
    addr=$(cat "$work/ready" 2>/dev/null)
    case "$addr" in
    "ofi:$provider"*/*) ;;
    *) fail_case "ofi:$provider: the node's address '$addr' does not name the provider" ;;
    esac
    ticket=$("$switch" ticket --key-file "$work/key" --job run-inc-ofi)
    with="LOOM_SWITCH=$addr LOOM_INC_TICKET=$ticket"
    case_run "ofi:$provider N=4" 4 --transport tcp -- "$program"
    kill "$spid" 2>/dev/null
    i=0
    while kill -0 "$spid" 2>/dev/null && [ $i -lt 250 ]; do sleep 0.02; i=$((i + 1)); done
    if kill -0 "$spid" 2>/dev/null; then
        fail_case "ofi:$provider: the node did not stop within 5 s of SIGTERM"
        kill -9 "$spid" 2>/dev/null
    fi
    wait "$spid" 2>/dev/null
    spid=""
    cat "$work/switch.log"
done

if [ "$failures" -ne 0 ]; then
    echo "run_inc_ofi: $failures case(s) failed"
    exit 1
fi
echo "run_inc_ofi: every case passed"
