# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# Sourced by the loomrun-driven suites (run_inc.sh, run_tuner.sh): a scratch directory
# $work, the failure count $failures, and case_run. Each program prints "rank R of N: C
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
