#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job that ends badly leaves nothing behind (TAP): over several trials, a rank SIGKILLed
# during start-up or mid-collective, and loomrun itself SIGKILLed (with --switch, so a
# loom-switch too). Afterwards: no process loomrun started still runs (ranks and loom-switch
# die with a SIGKILLed loomrun: PR_SET_PDEATHSIG), no /dev/shm segment named after the job
# (loomrun removes them when the job ends; after a SIGKILLed loomrun, the next job's shm
# driver reclaims those of dead owners), no bootstrap directory.
#
# Usage: test_loomrun_leftovers.sh PATH/TO/loomrun PATH/TO/loom-bench
set -u

LOOMRUN=${1:?usage: test_loomrun_leftovers.sh LOOMRUN LOOM_BENCH}
BENCH=${2:?usage: test_loomrun_leftovers.sh LOOMRUN LOOM_BENCH}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
export TMPDIR=$tmp  # a bootstrap directory would appear here

# A long all-reduce sweep: still running when the test strikes.
long_job=("$BENCH" allreduce -b 64K -e 64K -n 1000000 -w 1)

# alive PID...: the pids among them that still run (zombies count as gone).
alive() {
    local p state
    for p in "$@"; do
        state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
        [ "$state" != Z ] && echo "$p"
    done
}

# segments LOOMRUN_PID: /dev/shm entries of that loomrun's job (job id lr<pid>-...).
segments() {
    ls /dev/shm 2>/dev/null | grep -E "^loom-lr$1_" || true
}

# children PID: its direct children, waiting until there are at least $2.
children() {
    local i kids
    for i in $(seq 1 100); do
        kids=$(pgrep -P "$1" | tr '\n' ' ')
        [ "$(wc -w <<<"$kids")" -ge "$2" ] && break
        sleep 0.05
    done
    echo "$kids"
}

# Killing one rank, early (start-up) and late (mid-collective).
for delay in 0.05 0.4 1.5; do
    "$LOOMRUN" -n 4 --transport shm --grace 1 -- "${long_job[@]}" >"$tmp/out" 2>"$tmp/err" &
    lr=$!
    kids=$(children "$lr" 4)
    sleep "$delay"
    victim=$(awk '{print $2}' <<<"$kids")
    kill -KILL "$victim" 2>/dev/null
    wait "$lr"
    rc=$?
    # shellcheck disable=SC2086
    left=$(alive $kids | tr '\n' ' ')
    segs=$(segments "$lr")
    dirs=$(ls "$tmp" | grep loom-bootstrap || true)
    if [ "$rc" -ne 0 ] && [ -z "$left" ] && [ -z "$segs" ] && [ -z "$dirs" ]; then
        pass "rank killed after ${delay} s: loomrun exits $rc, nothing left"
    else
        fail "rank killed after ${delay} s: nothing left" "status $rc" "processes: $left" \
            "segments: $segs" "dirs: $dirs" "$(tail -3 "$tmp/err")"
    fi
done

# SIGKILLing loomrun: its ranks and its loom-switch go with it.
for delay in 0.3 1.5; do
    "$LOOMRUN" -n 2 --transport shm --switch -- "${long_job[@]}" >"$tmp/out" 2>"$tmp/err" &
    lr=$!
    kids=$(children "$lr" 3)
    sleep "$delay"
    kids="$kids $(pgrep -P "$lr" | tr '\n' ' ')"
    kill -KILL "$lr"
    wait "$lr" 2>/dev/null
    left=""
    for i in $(seq 1 40); do
        # shellcheck disable=SC2086
        left=$(alive $kids | tr '\n' ' ')
        [ -z "$left" ] && break
        sleep 0.05
    done
    if [ -n "$kids" ] && [ -z "$left" ]; then
        pass "loomrun SIGKILLed after ${delay} s: its ranks and loom-switch are gone"
    else
        fail "loomrun SIGKILLed after ${delay} s: its ranks and loom-switch are gone" \
            "children: $kids" "still running: $left"
    fi
    killed_lr="${killed_lr:-} $lr"
done

# The next job reclaims what the killed ones left in /dev/shm.
"$LOOMRUN" -n 2 --transport shm -- "$BENCH" allreduce -b 8 -e 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
segs=""
for lr in $killed_lr; do
    segs="$segs$(segments "$lr")"
done
if [ "$rc" -eq 0 ] && [ -z "$segs" ]; then
    pass "the next job leaves no segment of the SIGKILLed jobs"
else
    fail "the next job leaves no segment of the SIGKILLed jobs" "status $rc" "segments: $segs" \
        "$(tail -3 "$tmp/err")"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
