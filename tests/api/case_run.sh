# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# Sourced by the loomrun-driven suites (run_inc*.sh, run_tuner.sh): a scratch directory
# $work, the failure count $failures, case_run, and start_node / stop_node for the suites
# that run one loom-switch ($switch) at an address of their choice. Each program prints "rank R of N: C
# checks, F failed" per rank; a case passes when loomrun exits 0 and every rank reported
# 0 failed. Set $case_timeout (loomrun's --timeout) and, per case, $with (VAR=value words
# for the case's environment) before calling case_run.
script=$(basename "$0" .sh)
work=$(mktemp -d)
failures=0
with=""

# fail_case MESSAGE: counts a failed check and says which.
fail_case() {
    echo "$script: FAILED $1"
    failures=$((failures + 1))
}

# case_run NAME RANKS LOOMRUN-ARGS...: runs loomrun and checks every rank's summary.
case_run() {
    name=$1 ranks=$2
    shift 2
    echo "== $name"
    # shellcheck disable=SC2086,SC2154 # $with: VAR=value words; the sourcing script sets the rest
    env $with "$loomrun" -n "$ranks" --timeout "$case_timeout" "$@" >"$work/out" 2>&1
    rc=$?
    cat "$work/out"
    passed=$(grep -c " of $ranks: [0-9]* checks, 0 failed" "$work/out")
    if [ "$rc" -ne 0 ] || [ "$passed" -ne "$ranks" ]; then
        fail_case "$name (loomrun exit $rc, $passed of $ranks ranks passed)"
    fi
}

# start_node LISTEN JOB: loom-switch ($switch) listening at LISTEN with a node key of its
# own, waited for (10 s) through its ready file; sets $spid, $addr (what it wrote there) and
# $with (the ranks' LOOM_SWITCH and the LOOM_INC_TICKET of job JOB).
start_node() {
    rm -f "$work/ready"
    # shellcheck disable=SC2154 # $switch: set by the sourcing script
    "$switch" --listen "$1" --ready-file "$work/ready" --key-file "$work/key" \
        >"$work/switch.log" 2>&1 &
    spid=$!
    i=0
    while [ ! -s "$work/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
    addr=$(cat "$work/ready" 2>/dev/null)
    ticket=$("$switch" ticket --key-file "$work/key" --job "$2")
    with="LOOM_SWITCH=$addr LOOM_INC_TICKET=$ticket"
}

# stop_node LABEL: SIGTERM to the node, which must stop within 5 s (a failed case otherwise,
# and SIGKILL); then its log.
stop_node() {
    kill "$spid" 2>/dev/null
    i=0
    while kill -0 "$spid" 2>/dev/null && [ $i -lt 250 ]; do sleep 0.02; i=$((i + 1)); done
    if kill -0 "$spid" 2>/dev/null; then
        fail_case "$1: the node did not stop within 5 s of SIGTERM"
        kill -9 "$spid" 2>/dev/null
    fi
    wait "$spid" 2>/dev/null
    spid=""
    cat "$work/switch.log"
}
