#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A user's schedule on all three executors (TAP): the same files through loom-sim verify and
# run (verifier, simulator), the C API on real buffers under loomrun over shm and tcp
# (schedule_probe: results checked, blocking and not, in place, from a file and from
# memory), and loom-bench --schedule with -c. A schedule the verifier refuses is refused by
# all three with the verifier's message; one written for another N is refused by the engine.
#
# Usage: run_user_schedule.sh LOOMRUN LOOM-SIM LOOM-BENCH SCHEDULE_PROBE
set -u
loomrun=$1 sim=$2 bench=$3 probe=$4
. "$(dirname "${BASH_SOURCE[0]}")/../tools/tap.sh"

# ok_run NAME COMMAND...: exit 0; output in $tmp/out.
ok_run() {
    local name=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then
        pass "$name"
    else
        fail "$name" "exit $?" "$(tail -n 5 "$tmp/out")"
    fi
}
# has NAME TEXT: the last output holds TEXT.
has() {
    if grep -qF -- "$2" "$tmp/out"; then
        pass "$1"
    else
        fail "$1" "no '$2' in:" "$(tail -n 5 "$tmp/out")"
    fi
}

# The schedules: a ring all-reduce in the text form, a recursive-doubling all-gather in JSON
# (a count not divisible by N: the blocks differ in length), both for 4 ranks, as a user
# would save them from loom-sim and edit them.
"$sim" schedule --collective allreduce --algorithm ring --ranks 4 --count 1000 >"$tmp/ring.txt"
"$sim" schedule --collective allgather --algorithm recursive-doubling --ranks 4 --count 1003 \
    --format json >"$tmp/gather.json"
# Broken: rank 0's first received block overwrites instead of reducing, so its sum misses
# contributions. It still parses; only the verifier can tell.
awk '!done && /recv_reduce/ { sub(/recv_reduce/, "recv"); sub(/ src=[^ ]*/, ""); done = 1 } 1' \
    "$tmp/ring.txt" >"$tmp/broken.txt"

for f in ring.txt gather.json; do
    ok_run "loom-sim verify $f" "$sim" verify --schedule "$tmp/$f"
    ok_run "loom-sim run $f" "$sim" run --schedule "$tmp/$f"
done
"$sim" verify --schedule "$tmp/broken.txt" >"$tmp/out" 2>"$tmp/verify.err"
rc=$?
verdict=$(sed 's/^loom-sim: //' "$tmp/verify.err")
if [ "$rc" -eq 1 ] && [ -n "$verdict" ]; then
    pass "loom-sim verify refuses the broken schedule"
else
    fail "loom-sim verify refuses the broken schedule" "exit $rc: $verdict"
fi
# The verifier's own words, without the path the tools put before them.
why=${verdict##*: }

for t in shm tcp; do
    for f in ring.txt gather.json; do
        ok_run "C API over $t: $f on real buffers" \
            "$loomrun" -n 4 --transport "$t" -- "$probe" run "$tmp/$f"
        has "C API over $t: every rank checked $f" "rank 3: 8 user-schedule cases ok"
    done
done
ok_run "C API: the broken schedule refused with the verifier's message" \
    "$loomrun" -n 4 -- "$probe" refuse "$tmp/broken.txt" 12 "$why"
ok_run "C API: a schedule for 4 ranks refused on 2" \
    "$loomrun" -n 2 -- "$probe" refuse "$tmp/ring.txt" 2 "written for 4 ranks; the communicator has 2"

# Rank 0 runs another (valid) schedule of the same call: the wire signature differs, so the
# ranks fail with a mismatch at once rather than mixing data or waiting for the deadline.
"$sim" schedule --collective allreduce --algorithm recursive-doubling --ranks 4 --count 1000 \
    >"$tmp/rd.txt"
timeout 60 "$loomrun" -n 4 -- sh -c 'if [ "$LOOM_RANK" = 0 ]; then f=$1; else f=$2; fi
    exec "$0" run "$f"' "$probe" "$tmp/rd.txt" "$tmp/ring.txt" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "mismatch across ranks" "$tmp/out"; then
    pass "C API: ranks running different schedules fail with a mismatch"
else
    fail "C API: ranks running different schedules fail with a mismatch" "exit $rc" \
        "$(tail -n 3 "$tmp/out")"
fi

ok_run "loom-bench allreduce --schedule ring.txt -c 1" \
    "$loomrun" -n 4 -- "$bench" allreduce --schedule "$tmp/ring.txt" -c 1 -d int32,float -n 3 -w 1
has "loom-bench names the schedule in the algo column" "schedule:ring.txt"
has "loom-bench: nothing wrong" "Out of bounds values : 0 OK"
ok_run "loom-bench allgather --schedule gather.json over tcp" \
    "$loomrun" -n 4 --transport tcp -- "$bench" allgather --schedule "$tmp/gather.json" -c 1 -n 3 -w 1
has "loom-bench: the all-gather ran the JSON schedule" "schedule:gather.json"
"$loomrun" -n 4 -- "$bench" allreduce --schedule "$tmp/broken.txt" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep "loom-bench: " "$tmp/out" | grep -qF -- "$why"; then
    pass "loom-bench refuses the broken schedule with the verifier's message, exit 2"
else
    fail "loom-bench refuses the broken schedule with the verifier's message, exit 2" \
        "exit $rc" "$(tail -n 3 "$tmp/out")"
fi
"$loomrun" -n 4 -- "$bench" allgather --schedule "$tmp/ring.txt" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "loom-bench: .*computes allreduce, not allgather" "$tmp/out"; then
    pass "loom-bench refuses a schedule of another collective"
else
    fail "loom-bench refuses a schedule of another collective" "exit $rc" "$(tail -n 3 "$tmp/out")"
fi
# A broadcast whose one-way peers form a cycle (0 sends to 1, 1 to 2, 2 back to the root):
# each rank acknowledges what it received once its steps are done, so none waits on the
# next one's acknowledgement (before, all three waited until the deadline).
cat >"$tmp/cycle.txt" <<'SCHEDULE'
loom-schedule 1
collective=broadcast ranks=3 count=3 root=0 peer=1 dtype_size=4 segments=1 channels=1 algorithm=closed-ring topology=star:3
rank 0 scratch=0
  0 local_copy dst=out@0+3 src=in@0+3
  1 send peer=1 src=in@0+3
  2 recv peer=2 dst=out@0+1 deps=0
rank 1 scratch=0
  0 recv peer=0 dst=out@0+3
  1 send peer=2 src=out@0+3 deps=0
rank 2 scratch=0
  0 recv peer=1 dst=out@0+3
  1 send peer=0 src=out@0+1 deps=0
SCHEDULE
for t in shm tcp; do
    ok_run "a broadcast whose acknowledgements form a cycle completes over $t" \
        timeout 60 "$loomrun" -n 3 --transport "$t" -- "$bench" broadcast \
        --schedule "$tmp/cycle.txt" -c 1 -n 3 -w 1
    has "the cyclic broadcast's results are right over $t" "Out of bounds values : 0 OK"
done
expect_refusal "loom-bench --schedule with -b" 2 "drop -b" \
    "$bench" allreduce --schedule "$tmp/ring.txt" -b 1K

echo "1..$n"
[ "$failures" -eq 0 ]
