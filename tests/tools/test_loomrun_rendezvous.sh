#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The rendezvous as a user meets it (TAP): a missing peer is waited for
# LOOM_BOOTSTRAP_TIMEOUT (not LOOM_TIMEOUT), named with the variable; and no loom-bootstrap-*
# directory outlives its job: a killed rank of a job on the user's file rendezvous, ranks of a
# default rendezvous SIGKILLed (reclaimed by the next start), directories of dead writers,
# half-written files and empty directories.
#
# Usage: test_loomrun_rendezvous.sh PATH/TO/loomrun PATH/TO/loom-bench
set -u

LOOMRUN=${1:?usage: test_loomrun_rendezvous.sh LOOMRUN LOOM_BENCH}
BENCH=${2:?usage: test_loomrun_rendezvous.sh LOOMRUN LOOM_BENCH}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
unset LOOM_TRANSPORT LOOM_BOOTSTRAP LOOM_JOB LOOM_TCP_ADDR LOOM_RANK LOOM_SIZE
export TMPDIR=$tmp
uid=$(id -u)

# A missing peer: rank 0 of 3 alone, LOOM_BOOTSTRAP_TIMEOUT=1 against LOOM_TIMEOUT=60.
for transport in shm tcp; do
    start=$(date +%s%N)
    LOOM_TRANSPORT=$transport LOOM_RANK=0 LOOM_SIZE=3 LOOM_JOB="alone-$transport" \
        LOOM_BOOTSTRAP_TIMEOUT=1 LOOM_TIMEOUT=60 timeout 30 \
        "$BENCH" allreduce -b 8 -e 8 -n 1 -w 0 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    took_ms=$((($(date +%s%N) - start) / 1000000))
    if [ "$rc" -ne 0 ] && [ "$took_ms" -lt 15000 ] && grep -q "ranks 1,2" "$tmp/err" &&
        grep -q "LOOM_BOOTSTRAP_TIMEOUT" "$tmp/err"; then
        pass "$transport: a missing peer is waited for LOOM_BOOTSTRAP_TIMEOUT, named with it"
    else
        fail "$transport: a missing peer is waited for LOOM_BOOTSTRAP_TIMEOUT, named with it" \
            "status $rc after $took_ms ms" "$(cat "$tmp/err")"
    fi
done

# bootstrap_dirs: this user's default rendezvous directories in $TMPDIR.
bootstrap_dirs() {
    ls -A "$tmp" | grep "^loom-bootstrap-" || true
}
rm -rf "$tmp"/loom-bootstrap-*

# A rank killed in a job on the user's file rendezvous: loomrun removes the job's files.
mkdir -m 0700 "$tmp/rdv"
LOOM_BOOTSTRAP="file:$tmp/rdv" LOOM_JOB=killed.1 "$LOOMRUN" -n 2 --grace 1 -- \
    "$BENCH" allreduce -b 64K -e 64K -n 1000000 -w 1 >"$tmp/out" 2>"$tmp/err" &
lr=$!
for _ in $(seq 1 100); do
    [ "$(pgrep -P "$lr" | wc -l)" -ge 2 ] && [ -n "$(ls -A "$tmp/rdv" 2>/dev/null)" ] && break
    sleep 0.05
done
sleep 0.3
kill -KILL "$(pgrep -P "$lr" | head -1)"
wait "$lr"
rc=$?
if [ "$rc" -ne 0 ] && [ ! -e "$tmp/rdv" ]; then
    pass "a killed rank: loomrun removes the job's files from the user's file rendezvous"
else
    fail "a killed rank: loomrun removes the job's files from the user's file rendezvous" \
        "status $rc" "left: $(ls -A "$tmp/rdv" 2>/dev/null | tr '\n' ' ')" "$(tail -3 "$tmp/err")"
fi

# Ranks started without loomrun (as mpirun does) on the default rendezvous, SIGKILLed.
LOOM_RANK=0 LOOM_SIZE=2 LOOM_JOB=mpikilled LOOM_TRANSPORT=shm LOOM_BOOTSTRAP_TIMEOUT=30 \
    "$BENCH" allreduce -b 8 -e 8 -n 1 -w 0 >/dev/null 2>&1 &
victim=$!
for _ in $(seq 1 100); do
    [ -n "$(ls -A "$tmp/loom-bootstrap-$uid-mpikilled" 2>/dev/null)" ] && break
    sleep 0.05
done
kill -KILL "$victim"
wait "$victim" 2>/dev/null
left_by_kill=$(bootstrap_dirs)

# Directories a killed launch can leave: files of a dead writer, a half-written temporary
# file of a dead writer, an empty directory an hour old; and two that must stay: a live
# process's file and a directory created a moment ago.
dead_pid=$(sh -c 'echo $$')
live_start=$(awk '{print $22}' "/proc/$$/stat")
mkdir -m 0700 "$tmp/loom-bootstrap-$uid-dead" "$tmp/loom-bootstrap-$uid-halfwritten" \
    "$tmp/loom-bootstrap-$uid-emptyold" "$tmp/loom-bootstrap-$uid-live" \
    "$tmp/loom-bootstrap-$uid-emptynew"
printf 'loom1 %s 12345 -\n2' "$dead_pid" >"$tmp/loom-bootstrap-$uid-dead/j.rank.0"
printf 'loom1 %s' "$dead_pid" >"$tmp/loom-bootstrap-$uid-halfwritten/.j.tmp.0.$dead_pid.0"
touch -d '2 hours ago' "$tmp/loom-bootstrap-$uid-emptyold"
printf 'loom1 %s %s -\n2' "$$" "$live_start" >"$tmp/loom-bootstrap-$uid-live/j.rank.0"

"$LOOMRUN" -n 1 -- true >"$tmp/out" 2>"$tmp/err"
rc=$?
left=$(bootstrap_dirs | tr '\n' ' ')
if [ -n "$left_by_kill" ] && [ "$rc" -eq 0 ] &&
    [ "$left" = "loom-bootstrap-$uid-emptynew loom-bootstrap-$uid-live " ]; then
    pass "loomrun's start reclaims what killed jobs left, and only that"
else
    fail "loomrun's start reclaims what killed jobs left, and only that" \
        "left by the kill: $left_by_kill" "status $rc, left: $left" "$(cat "$tmp/err")"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
