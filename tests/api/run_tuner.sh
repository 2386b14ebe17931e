#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The tuner end to end (test_api_tuner.cc under loomrun): agreement and identical choices
# over shm (4 ranks) and tcp (3 ranks); the automatic light calibration writes a missing
# file once and the next communicator reads it; a malformed file is reported and the
# defaults used; a stale or implausible measured line is reported and not used; an
# unwritable file is reported and the job runs; LOOM_EXPLAIN=1 prints the choices on rank 0
# only.
# A case passes when loomrun exits 0 and every rank reported "0 failed".
# Usage: run_tuner.sh LOOMRUN TEST_API_TUNER
set -u
loomrun=$1
program=$2
case_timeout=200
# shellcheck source=case_run.sh
. "$(dirname "$0")/case_run.sh"
trap 'rm -rf "$work"' EXIT
export LOOM_TIMEOUT=30

mkdir -p "$work/shm" "$work/tcp"
case_run "agreement, choices, traffic, calibrate over shm" 4 --transport shm -- \
    "$program" "$work/shm"
case_run "agreement, choices, traffic, calibrate over tcp" 3 --transport tcp -- \
    "$program" "$work/tcp"

# loom_comm_explain chooses what the call runs, with and without LOOM_ALGO, on both
# transports (the grid runs the tuner's defaults: no calibration is measured).
LOOM_CALIBRATE=off case_run "explain = what runs, shm" 4 --transport shm -- \
    "$program" --explain-matches-run
LOOM_CALIBRATE=off LOOM_ALGO="allreduce=ring;alltoall=bruck;broadcast=binomial" \
    case_run "explain = what runs, tcp, LOOM_ALGO" 3 --transport tcp -- \
    "$program" --explain-matches-run
LOOM_CALIBRATE=off LOOM_ALGO="allreduce=inc;reduce=ring" \
    case_run "explain = what runs, shm, LOOM_ALGO inc without a node" 3 --transport shm -- \
    "$program" --explain-matches-run

export LOOM_CALIBRATE=auto LOOM_CALIBRATION_FILE="$work/auto/calibration.txt"
case_run "no calibration file: measured at creation" 3 --transport shm -- \
    "$program" --expect-source measured
if ! grep -q "source=measured" "$LOOM_CALIBRATION_FILE" 2>/dev/null; then
    fail_case "the automatic calibration wrote no line"
fi
case_run "the file written: read, not measured again" 3 --transport shm -- \
    "$program" --expect-source file

case_run "another rank count: measured for it, the first line kept" 2 --transport shm -- \
    "$program" --expect-source measured
if [ "$(grep -c "source=measured" "$LOOM_CALIBRATION_FILE")" -ne 2 ] ||
    ! grep -q " ranks=2 " "$LOOM_CALIBRATION_FILE" || ! grep -q " ranks=3 " "$LOOM_CALIBRATION_FILE"; then
    fail_case "the file does not hold one line for 3 ranks and one for 2:"
    cat "$LOOM_CALIBRATION_FILE"
fi

printf 'host=%s transport=shm alpha_us=quick bw_GBps=1\n' "$(hostname)" >"$LOOM_CALIBRATION_FILE"
case_run "malformed calibration file: defaults" 2 --transport shm -- \
    "$program" --expect-source defaults
if ! grep -q "calibration.txt line 1: alpha_us='quick'" "$work/out"; then
    fail_case "the malformed line was not reported"
fi

# A measured line that is stale or implausible does not steer the tuner: the log says why,
# and it is measured again (auto) or the defaults serve (off).
printf 'host=%s transport=shm ranks=2 alpha_us=2 bw_GBps=4 reduce_GBps=8 source=measured date=2020-01-01T00:00:00Z\n' \
    "$(hostname)" >"$LOOM_CALIBRATION_FILE"
case_run "stale measured line: ignored, measured again" 2 --transport shm -- \
    "$program" --expect-source measured
if ! grep -q "is ignored: it was measured 2020-01-01T00:00:00Z" "$work/out" ||
    grep -q "date=2020" "$LOOM_CALIBRATION_FILE"; then
    fail_case "the stale line was not reported and replaced"
fi
{
    printf 'host=%s transport=shm ranks=2 alpha_us=18 bw_GBps=4 source=measured date=%s\n' \
        "$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf 'host=%s transport=tcp ranks=2 alpha_us=5.4 bw_GBps=2 source=measured date=%s\n' \
        "$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$LOOM_CALIBRATION_FILE"
LOOM_CALIBRATE=off case_run "shm alpha above tcp alpha: ignored, defaults" 2 --transport shm -- \
    "$program" --expect-source defaults
if ! grep -q "shared-memory alpha 18 us exceeds this host's tcp alpha 5.4 us" "$work/out"; then
    fail_case "the implausible line was not reported"
fi

# A measurement that stays implausible (shared memory slower than this file's tcp α) is
# measured twice, then not stored: the log says why and the defaults serve.
printf 'host=%s transport=tcp ranks=2 alpha_us=0.01 bw_GBps=2 source=measured date=%s\n' \
    "$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$LOOM_CALIBRATION_FILE"
case_run "implausible measurement: measured twice, not stored" 2 --transport shm -- \
    "$program" --expect-source defaults
if ! grep -q "calibration measured twice and not stored in $LOOM_CALIBRATION_FILE: shared-memory alpha" \
    "$work/out" || grep -q "transport=shm" "$LOOM_CALIBRATION_FILE"; then
    fail_case "the implausible measurement was stored or not reported"
fi

# A calibration file that cannot be written: a warning naming it and why; the job runs.
: >"$work/blocker"
LOOM_CALIBRATION_FILE="$work/blocker/calibration.txt" \
    case_run "unwritable calibration file: measured, used, reported" 2 --transport shm -- \
    "$program" --expect-source measured
if ! grep -q "cannot write the calibration file $work/blocker/calibration.txt: Not a directory" \
    "$work/out"; then
    fail_case "the unwritable calibration file was not reported"
fi

rm -f "$LOOM_CALIBRATION_FILE"
export LOOM_CALIBRATE=off LOOM_EXPLAIN=1
case_run "LOOM_EXPLAIN=1" 3 --transport shm -- "$program" --expect-source defaults
explained=$(grep -c "^\[0\] loom explain: " "$work/out")
others=$(grep -c "^\[[12]\] loom explain: " "$work/out")
if [ "$explained" -lt 1 ] || [ "$others" -ne 0 ] || ! grep -q "choice: " "$work/out"; then
    fail_case "LOOM_EXPLAIN printed $explained lines on rank 0, $others elsewhere"
fi
if [ -e "$LOOM_CALIBRATION_FILE" ]; then
    fail_case "LOOM_CALIBRATE=off wrote a calibration file"
fi

# The cost class is what the driver says carries its messages, whatever its name.
unset LOOM_EXPLAIN
case_run "fwd:tcp is costed as tcp" 2 --fabric ring:2 --transport tcp -- \
    "$program" --expect-source defaults tcp

echo "run_tuner: $failures failed"
[ "$failures" -eq 0 ]
