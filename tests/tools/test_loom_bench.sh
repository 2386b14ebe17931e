#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom-bench, smoke (TAP): two ranks under loomrun run the checked allreduce sweep with no
# wrong element in either half, printed as nccl-tests prints it, and bad arguments end with
# exit 2 and ONE line "loom-bench: <reason>".
# Not a performance test: the figures are not looked at.
#
# Usage: test_loom_bench.sh PATH/TO/loomrun PATH/TO/loom-bench     (Meson passes both)
set -u

LOOMRUN=${1:?usage: test_loom_bench.sh PATH/TO/loomrun PATH/TO/loom-bench}
BENCH=${2:?usage: test_loom_bench.sh PATH/TO/loomrun PATH/TO/loom-bench}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

# ---- a checked sweep: 8 B .. 64 KiB by 8 (5 sizes), two ranks ----------------------------
for transport in shm tcp; do
    "$LOOMRUN" -n 2 --transport "$transport" --timeout 60 -- \
        "$BENCH" allreduce -b 8 -e 64K -f 8 -n 3 -w 1 -c >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        pass "$transport: loomrun -n 2 loom-bench allreduce -c exits 0"
    else
        fail "$transport: loomrun -n 2 loom-bench allreduce -c exits 0" "exit $rc" \
            "$(head -c 600 "$tmp/err")"
    fi
    # Rank 0's rows: "[0]  SIZE COUNT TYPE REDOP ROOT, then TIME ALGBW BUSBW #WRONG out of
    # place and in place, then loom's ALGO PRED P99 SENT".
    rows=$(grep -E '^\[0\] +[0-9]+ ' "$tmp/out")
    sizes=$(echo "$rows" | awk '{print $2}' | tr '\n' ' ')
    wrong=$(echo "$rows" | awk '{print $10; print $14}' | sort -u | tr '\n' ' ')
    if [ "$sizes" = "8 64 512 4096 32768 " ]; then
        pass "$transport: one row per size 8, 64, 512, 4096, 32768"
    else
        fail "$transport: one row per size 8, 64, 512, 4096, 32768" "sizes: $sizes" \
            "$(head -c 600 "$tmp/out")"
    fi
    if [ "$wrong" = "0 " ]; then
        pass "$transport: both wrong-element columns are 0 in every row"
    else
        fail "$transport: both wrong-element columns are 0 in every row" "wrong-element columns: $wrong"
    fi
    if grep -q -E '^\[0\] # memcpy bandwidth .*: [0-9.]+ GB/s' "$tmp/out" &&
        grep -q -E "^\[0\] # loom-bench allreduce, .*N = 2 ranks, transport $transport" \
            "$tmp/out"; then
        pass "$transport: the header names N and the transport and gives memcpy GB/s"
    else
        fail "$transport: the header names N and the transport and gives memcpy GB/s" \
            "$(head -c 600 "$tmp/out")"
    fi
done

# ---- bad arguments: exit 2, one line on stderr, no communicator needed ------------------
# expect_bad NAME PATTERN ARGS...: loom-bench ARGS exits 2 with one line naming PATTERN.
expect_bad() {
    expect_refusal "$1" 2 "$2" "$BENCH" "${@:3}"
}
expect_bad "bad size exits 2" "-b: expected a number" allreduce -b lots
expect_bad "unknown collective exits 2" "unknown collective 'allreduk'" allreduk
expect_bad "-b above -e exits 2" "larger than -e" allreduce -b 1M -e 1K
expect_bad "unknown dtype exits 2" "-d 'float17': expected one of int8" allreduce --dtype float17
"$LOOMRUN" -n 2 --timeout 60 -- "$BENCH" allreduce -f 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q -F "loom-bench: -f '1': expected an integer factor >= 2" "$tmp/out" \
    "$tmp/err"; then
    pass "under loomrun, a bad -f exits 2"
else
    fail "under loomrun, a bad -f exits 2" "exit $rc" "$(head -c 300 "$tmp/err")"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
