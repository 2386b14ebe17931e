#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom-ctld's in-network slot admission end to end (TAP): loom-ctld as a real process on
# loopback with the docs' example fabric (spine over leaf0 and leaf1), its switches joined
# with their slots and heartbeating, and jobs asking for allocations per communicator.
# All or nothing: with leaf1 full, a tree over all ranks is refused naming leaf1 and nothing
# is taken on spine or leaf0; a job over --slot-quota is refused naming the quota; an
# allocation whose job stops renewing is gone, its slots free, within three 1 s periods;
# a switch whose lease runs out revokes the allocations that used it, and the job's next
# renewal is told which; a drain revokes too; kill -9 and restart with the same --state keeps
# every allocation (active and revoked) and its lease; malformed, unknown and oversized
# requests get 4xx and are counted; /metrics, loomctl slots and jobs (table and --json).
#
# Usage: test_loom_ctld_slots.sh PATH/TO/loom-ctld PATH/TO/loomctl    (Meson passes them)
set -u

CTLD=${1:?usage: test_loom_ctld_slots.sh PATH/TO/loom-ctld PATH/TO/loomctl}
CTL=${2:?usage: test_loom_ctld_slots.sh PATH/TO/loom-ctld PATH/TO/loomctl}
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tap.sh
. "$here/tap.sh"
# shellcheck source=ctld_common.sh
. "$here/ctld_common.sh"
example=$here/../../docs/fabric-example.json
state=$tmp/ctld.state

flat() { cat "$@" 2>/dev/null | tr '\n' '|' | head -c 600; }
snap_metrics() { http "$addr" GET /metrics "${auth[@]}" | tr ' ' '\n' >"$tmp/metrics"; }
metric() { grep -A1 -xF -- "$1" "$tmp/metrics" | tail -n 1; }
field() {
    local re="\"$2\":(\"([^\"]*)\"|([0-9]+))"
    [[ "$1" =~ $re ]] && echo "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}
# used NODE: the slots in use on NODE now (from /v1/slots).
used() {
    http "$addr" GET /v1/slots "${auth[@]}" | cut -d' ' -f2- |
        python3 -c 'import json,sys; print(next(n["used"] for n in json.load(sys.stdin)["nodes"] if n["name"] == sys.argv[1]))' "$1"
}
# join NAME SLOTS: a switch joins with SLOTS slots; sets $id and $lease.
join() {
    local got
    got=$(http "$addr" POST /v1/members "${auth[@]}" --body "{\"name\":\"$1\",\"kind\":\"switch\",\"addresses\":[],\"slots\":$2}")
    id=$(field "$got" id)
    lease=$(field "$got" lease)
}
# check NAME ANSWER EXPR: passes when ANSWER ("STATUS BODY") parses and the Python expression
# EXPR holds over its status s and body d (the JSON writer sorts keys: no text patterns).
check() {
    local name=$1 answer=$2
    if python3 -c 'import json,sys; s, _, b = sys.argv[1].partition(" "); s = int(s); d = json.loads(b); sys.exit(not eval(sys.argv[2]))' "$answer" "$3" 2>"$tmp/check.err"; then
        pass "$name"
    else
        fail "$name" "${answer:0:400}" "$(flat "$tmp/check.err")"
    fi
}
# beat ID LEASE: heartbeats every 200 ms in the background until killed (python itself, so
# its pid is the one to kill); sets $beat_pid.
beat() {
    python3 "$here/ctld_http.py" "$addr" POST "/v1/members/$1/heartbeat" "${auth[@]}" --body "{\"lease\":\"$2\"}" \
        --repeat 3000 --interval 0.2 >/dev/null &
    beat_pid=$!
    pids+=("$beat_pid")
}
# grant BODY: POST /v1/allocations; the answer in $granted, its id and lease in $aid, $alease.
grant() {
    granted=$(http "$addr" POST /v1/allocations "${auth[@]}" --body "$1")
    aid=$(field "$granted" id)
    alease=$(field "$granted" lease)
}

# --- grants, all or nothing: a 1 s heartbeat period, a quota of 6 slots per job -------------
if ! start_ctld main --heartbeat 1 --fabric "$example" --state "$state" --slot-quota 6 \
    --max-body 4096; then
    fail "loom-ctld --fabric --slot-quota starts" "$(flat "$tmp/main.out" "$tmp/main.err")"
    echo "1..$n"
    exit 1
fi
join spine 4 && id_spine=$id && lease_spine=$lease && beat "$id" "$lease"
join leaf0 4 && id_leaf0=$id && lease_leaf0=$lease && beat "$id" "$lease"
join leaf1 1 && id_leaf1=$id && beat "$id" "$lease" && beat_leaf1=$beat_pid
check "a switch joins with its slots" "$(http "$addr" GET /v1/members "${auth[@]}")" \
    's == 200 and [(m["name"], m["capacity"]) for m in d["members"]] == [("spine", 4), ("leaf0", 4), ("leaf1", 1)]'

grant '{"job":"A","comm":"c0","ranks":"all","slots":1}'
if [[ "$granted" == "201 "* ]] && [[ "$granted" == *'"nodes":["spine","leaf0","leaf1"]'* ]]; then
    pass "a grant over all ranks: 201, every node of the tree, root first"
else
    fail "a grant over all ranks: 201, every node of the tree, root first" "$granted"
fi
id_a=$aid
lease_a=$alease
python3 "$here/ctld_http.py" "$addr" POST "/v1/allocations/$id_a/renew" "${auth[@]}" \
    --body "{\"lease\":\"$lease_a\"}" --repeat 3000 --interval 0.2 >"$tmp/renew_a" &
renew_a=$!
pids+=("$renew_a")

grant '{"job":"B","comm":"c0","ranks":[0,1,2,3]}'
if [[ "$granted" == "409 "* ]] && [[ "$granted" == *'switch leaf1 has 0 of 1 slots free'* ]] &&
    [[ "$granted" == *'"granted":false'* ]] && [[ "$granted" == *'"refusal":"no_slots"'* ]] &&
    [ "$(used spine)" = 1 ] && [ "$(used leaf0)" = 1 ]; then
    pass "a tree with one full node: nothing granted (spine and leaf0 untouched), the reason names leaf1"
else
    fail "a tree with one full node: nothing granted, the reason names leaf1" "$granted" \
        "spine used $(used spine), leaf0 used $(used leaf0)"
fi
grant '{"job":"B","comm":"c0","ranks":[0,1],"slots":2}'
if [[ "$granted" == "201 "* ]] && [[ "$granted" == *'"nodes":["spine","leaf0"]'* ]]; then
    pass "ranks 0,1 need only spine and leaf0: granted"
else
    fail "ranks 0,1 need only spine and leaf0: granted" "$granted"
fi
id_b=$aid
lease_b=$alease
# B renews until its expiry is timed below, so the checks in between may take their time.
python3 "$here/ctld_http.py" "$addr" POST "/v1/allocations/$id_b/renew" "${auth[@]}" \
    --body "{\"lease\":\"$lease_b\"}" --repeat 3000 --interval 0.2 >/dev/null &
renew_b=$!
pids+=("$renew_b")
grant '{"job":"A","comm":"c1","nodes":["spine","leaf0"],"slots":2}'
if [[ "$granted" == "409 "* ]] &&
    [[ "$granted" == *'job A is over its quota of 6 slots (it holds 3, this communicator asks 4)'* ]]; then
    pass "a job over --slot-quota is refused naming the quota"
else
    fail "a job over --slot-quota is refused naming the quota" "$granted"
fi
expect "a second allocation for one communicator: 409" 409 '"refusal":"exists"' -- \
    POST /v1/allocations "${auth[@]}" --body '{"job":"A","comm":"c0","nodes":["spine"]}'
expect "no aggregation node: 409 naming it" 409 "no aggregation node is up" -- \
    POST /v1/allocations "${auth[@]}" --body '{"job":"C","comm":"c0","nodes":[]}'
expect "a node that is not a member: 409 naming it" 409 "h0 is not an in-network member" -- \
    POST /v1/allocations "${auth[@]}" --body '{"job":"C","comm":"c0","nodes":["spine","h0"]}'
check "GET /v1/allocations?job=B lists B's only" "$(http "$addr" GET "/v1/allocations?job=B" "${auth[@]}")" \
    's == 200 and [(a["job"], a["comm"], a["nodes"], a["slots"], a["state"]) for a in d["allocations"]] == [("B", "c0", ["spine", "leaf0"], 2, "active")]'
ctl=("$CTL" --controller "$addr" "${auth[@]}")
"${ctl[@]}" slots >"$tmp/slots" 2>&1
rc=$?
if [ $rc = 0 ] && head -n 1 "$tmp/slots" | grep -q "^NAME  *KIND  *STATE  *CAPACITY  *USED  *FREE  *JOBS" &&
    grep -q "^spine  *switch  *up  *4  *3  *1  *A:1,B:2" "$tmp/slots" &&
    grep -q "^leaf1  *switch  *up  *1  *1  *0  *A:1" "$tmp/slots" && grep -q "^quota per job: 6 slots" "$tmp/slots"; then
    pass "loomctl slots: capacity, used, free and by which job"
else
    fail "loomctl slots: capacity, used, free and by which job" "exit $rc" "$(flat "$tmp/slots")"
fi
"${ctl[@]}" jobs >"$tmp/jobs" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "^A  *1  *0  *3  *c0" "$tmp/jobs" && grep -q "^B  *1  *0  *4  *c0" "$tmp/jobs"; then
    pass "loomctl jobs: the jobs holding allocations"
else
    fail "loomctl jobs: the jobs holding allocations" "exit $rc" "$(flat "$tmp/jobs")"
fi
"${ctl[@]}" slots --json >"$tmp/out" 2>&1 && "${ctl[@]}" jobs --json >"$tmp/out2" 2>&1
if python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); j=json.load(open(sys.argv[2])); sys.exit(not (s["quota"] == 6 and {n["name"]: n["free"] for n in s["nodes"]} == {"spine": 1, "leaf0": 1, "leaf1": 0} and [x["job"] for x in j["jobs"]] == ["A", "B"]))' "$tmp/out" "$tmp/out2"; then
    pass "loomctl slots --json and jobs --json"
else
    fail "loomctl slots --json and jobs --json" "$(flat "$tmp/out" "$tmp/out2")"
fi

# B stops renewing: gone three periods (3 s) after its last renewal, within the sweep's
# quarter period and the poll (a loaded machine may add a period); never before.
kill "$renew_b" 2>/dev/null
wait "$renew_b" 2>/dev/null
ms=$(http "$addr" EXPIRED_AFTER "$id_b" "$lease_b" "${auth[@]}")
if [[ "$ms" =~ ^[0-9]+$ ]] && [ "$ms" -ge 2950 ] && [ "$ms" -le 4500 ] && [ "$(used leaf0)" = 1 ]; then
    pass "a job that stops renewing loses its allocation within three periods (${ms} ms), its slots free"
else
    fail "a job that stops renewing loses its allocation within three periods" "after: $ms ms, leaf0 used $(used leaf0)"
fi
expect "a renewal after expiry: 404 saying why" 404 "its lease ran out" -- \
    POST "/v1/allocations/$id_b/renew" "${auth[@]}" --body "{\"lease\":\"$lease_b\"}"
if [ "$(grep -c '^200 ' "$tmp/renew_a")" -ge 5 ] && ! grep -qv '^200 ' "$tmp/renew_a"; then
    pass "an allocation renewed every 200 ms stays active"
else
    fail "an allocation renewed every 200 ms stays active" "$(flat "$tmp/renew_a")"
fi

# leaf1's heartbeats stop: within three periods it is down and A's allocation is revoked,
# naming it; A's next renewal is refused (410) with the reason; spine's slot is free again.
# A keeps renewing (now refused): the revoked record stays while the job asks.
kill "$beat_leaf1" 2>/dev/null
revoked=
for _ in $(seq 60); do
    revoked=$(http "$addr" GET "/v1/allocations?job=A" "${auth[@]}")
    [[ "$revoked" == *'"revoked_because":"switch leaf1 is down"'* ]] && break
    sleep 0.1
done
if [[ "$revoked" == *'"state":"revoked"'* ]] && [[ "$revoked" == *'"revoked_because":"switch leaf1 is down"'* ]] &&
    [ "$(used spine)" = 0 ]; then
    pass "a switch going down revokes the allocation that used it, naming it; its slots are free"
else
    fail "a switch going down revokes the allocation that used it, naming it" "${revoked:0:400}" "spine used $(used spine)"
fi
expect "the job's next renewal: 410 naming the switch" 410 "allocation $id_a is revoked: switch leaf1 is down" -- \
    POST "/v1/allocations/$id_a/renew" "${auth[@]}" --body "{\"lease\":\"$lease_a\"}"
expect "a tree over all ranks is refused while leaf1 is down" 409 "rank 2 has no in-network path: leaf1 is down" -- \
    POST /v1/allocations "${auth[@]}" --body '{"job":"C","comm":"c0","ranks":"all"}'
grant '{"job":"C","comm":"c9","ranks":[0,1],"slots":3}'
id_c=$aid
lease_c=$alease
[[ "$granted" == "201 "* ]] && pass "a grant over the part of the tree still up" || fail "a grant over the part of the tree still up" "$granted"
python3 "$here/ctld_http.py" "$addr" POST "/v1/allocations/$id_c/renew" "${auth[@]}" \
    --body "{\"lease\":\"$lease_c\"}" --repeat 3000 --interval 0.2 >/dev/null &
pids+=($!)
snap_metrics
ok=1
for want in 'loom_ctld_slots_capacity{member="spine"}:4' 'loom_ctld_slots_used{member="spine"}:3' \
    'loom_ctld_slots_used{member="leaf1"}:0' 'loom_ctld_allocations{state="active"}:1' \
    'loom_ctld_allocations{state="revoked"}:1' loom_ctld_slot_grants_total:3 \
    'loom_ctld_slot_refusals_total{reason="no_slots"}:1' 'loom_ctld_slot_refusals_total{reason="over_quota"}:1' \
    'loom_ctld_slot_refusals_total{reason="exists"}:1' 'loom_ctld_slot_refusals_total{reason="no_tree"}:2' \
    'loom_ctld_slot_refusals_total{reason="unknown_node"}:1' loom_ctld_allocations_expired_total:1 \
    loom_ctld_allocations_revoked_total:1 'loom_ctld_refused_total{reason="conflict"}:6'; do
    got=$(metric "${want%:*}")
    [ "$got" = "${want##*:}" ] || { ok=0; fail "/metrics: slots per member, allocations, grants, refusals by reason" "${want%:*}: $got, expected ${want##*:}"; }
done
[ $ok = 1 ] && pass "/metrics: slots per member, allocations, grants, refusals by reason"

# --- kill -9 and restart with the same --state ----------------------------------------------
# Restarted with a long period: the members' and allocations' fresh grace (three periods)
# outlasts the checks below on a loaded machine.
kill -9 "$pid"
wait "$pid" 2>/dev/null
if start_ctld restarted --heartbeat 5 --fabric "$example" --state "$state" --slot-quota 6 --max-body 4096; then
    check "kill -9 and restart: every allocation is there (active and revoked), slots still held" \
        "$(http "$addr" GET /v1/allocations "${auth[@]}")" \
        "s == 200 and sorted((a['id'], a['job'], a['comm'], a['nodes'], a['state'], a.get('revoked_because')) for a in d['allocations']) == [($id_a, 'A', 'c0', ['spine', 'leaf0', 'leaf1'], 'revoked', 'switch leaf1 is down'), ($id_c, 'C', 'c9', ['spine', 'leaf0'], 'active', None)] and $(used spine) == 3"
    expect "an allocation's lease renews after the restart" 200 '"state":"active"' -- \
        POST "/v1/allocations/$id_c/renew" "${auth[@]}" --body "{\"lease\":\"$lease_c\"}"
    # The switches and job C carry on against the restarted controller, so nothing expires
    # while the checks below run, however slow the machine.
    beat "$id_spine" "$lease_spine"
    beat "$id_leaf0" "$lease_leaf0"
    python3 "$here/ctld_http.py" "$addr" POST "/v1/allocations/$id_c/renew" "${auth[@]}" \
        --body "{\"lease\":\"$lease_c\"}" --repeat 3000 --interval 1 >/dev/null &
    pids+=($!)
    expect "a revoked one still tells why after the restart" 410 "switch leaf1 is down" -- \
        POST "/v1/allocations/$id_a/renew" "${auth[@]}" --body "{\"lease\":\"$lease_a\"}"
    grant '{"job":"D","comm":"c0","nodes":["spine"]}'
    [ "$(field "$granted" id)" -gt "$id_c" ] && pass "allocation ids are not reused after a restart" ||
        fail "allocation ids are not reused after a restart" "$granted"
    expect "a release: 200" 200 '"released":true' -- DELETE "/v1/allocations/$(field "$granted" id)" "${auth[@]}"
    [ "$(used spine)" = 3 ] && pass "a release frees its slots" || fail "a release frees its slots" "spine used $(used spine)"

    # --- refusals: 4xx, counted ---------------------------------------------------------------
    expect "a grant without the token: 401" 401 "no bearer token" -- POST /v1/allocations \
        --body '{"job":"E","comm":"c","nodes":["spine"]}'
    expect "malformed JSON: 400" 400 "not JSON" -- POST /v1/allocations "${auth[@]}" --body '{"job":'
    expect "a missing job: 400 naming it" 400 "missing field 'job'" -- POST /v1/allocations "${auth[@]}" \
        --body '{"comm":"c","nodes":["spine"]}'
    expect "a bad job name: 400" 400 "missing field 'job'" -- POST /v1/allocations "${auth[@]}" \
        --body '{"job":"a b","comm":"c","nodes":["spine"]}'
    expect "zero slots: 400" 400 "'slots' must be 1 to" -- POST /v1/allocations "${auth[@]}" \
        --body '{"job":"E","comm":"c","nodes":["spine"],"slots":0}'
    expect "slots that are not a number: 400" 400 "'slots' must be" -- POST /v1/allocations "${auth[@]}" \
        --body '{"job":"E","comm":"c","nodes":["spine"],"slots":"many"}'
    expect "both ranks and nodes: 400" 400 "not both" -- POST /v1/allocations "${auth[@]}" \
        --body '{"job":"E","comm":"c","nodes":["spine"],"ranks":"all"}'
    expect "ranks out of the fabric: 400" 400 "distinct ranks 0..3" -- POST /v1/allocations "${auth[@]}" \
        --body '{"job":"E","comm":"c","ranks":[0,9]}'
    expect "a node twice: 400" 400 "distinct member names" -- POST /v1/allocations "${auth[@]}" \
        --body '{"job":"E","comm":"c","nodes":["spine","spine"]}'
    expect "a grant over --max-body: 413" 413 "" -- POST /v1/allocations "${auth[@]}" --body-bytes 10000
    expect "a renewal without its lease: 400" 400 "missing field 'lease'" -- \
        POST "/v1/allocations/$id_c/renew" "${auth[@]}" --body '{}'
    expect "a renewal with another lease: 410" 410 "lease is not allocation" -- \
        POST "/v1/allocations/$id_c/renew" "${auth[@]}" --body '{"lease":"nope"}'
    expect "a renewal of an unknown allocation: 404" 404 "no allocation 999" -- \
        POST /v1/allocations/999/renew "${auth[@]}" --body '{"lease":"x"}'
    expect "a release of an unknown allocation: 404" 404 "no allocation 999" -- \
        DELETE /v1/allocations/999 "${auth[@]}"
    expect "an allocation id that is not a number: 404" 404 "no such path" -- \
        DELETE /v1/allocations/abc "${auth[@]}"
    expect "PUT on /v1/slots: 405" 405 "allowed: GET" -- PUT /v1/slots "${auth[@]}" --body '{}'
    expect "DELETE on /v1/allocations: 405" 405 "allowed: GET, POST" -- DELETE /v1/allocations "${auth[@]}"
    expect "the server still serves after the refusals" 200 '"nodes"' -- GET /v1/slots "${auth[@]}"
    snap_metrics
    ok=1
    for want in unauthorized:1 bad_request:9 too_large:1 not_found:3 method_not_allowed:2 gone:2; do
        got=$(metric "loom_ctld_refused_total{reason=\"${want%%:*}\"}")
        [ "$got" = "${want#*:}" ] || { ok=0; fail "the refusals are counted by reason" "${want%%:*}: $got, expected ${want#*:}"; }
    done
    [ $ok = 1 ] && pass "the refusals are counted by reason"

    # --- drain ------------------------------------------------------------------------------
    "$CTL" --controller "$addr" "${auth[@]}" drain leaf0 >/dev/null 2>&1
    expect "a drain revokes the allocations over the drained switch at once" 410 "switch leaf0 is drained" -- \
        POST "/v1/allocations/$id_c/renew" "${auth[@]}" --body "{\"lease\":\"$lease_c\"}"
    "$CTL" --controller "$addr" "${auth[@]}" jobs >"$tmp/jobs" 2>&1
    grep -q "^C  *1  *1  *0  *c9" "$tmp/jobs" && pass "loomctl jobs counts the revoked allocation, holding no slots" ||
        fail "loomctl jobs counts the revoked allocation, holding no slots" "$(flat "$tmp/jobs")"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    [ $rc = 0 ] && grep -q '"format": 2' "$state" && pass "SIGTERM: a clean stop, the state file in format 2" ||
        fail "SIGTERM: a clean stop, the state file in format 2" "exit $rc" "$(flat "$tmp/restarted.err")"
else
    fail "restart with the same --state" "$(flat "$tmp/restarted.err")"
fi

# --- a state file of format 1 (before slots) is still read -----------------------------------
cat >"$tmp/old.state" <<'EOF'
{"format": 1, "next_id": 2, "members": [{"id": 1, "name": "leaf0", "kind": "switch",
 "addresses": [], "lease": "x", "state": "up", "drained": false, "joined_unix_s": 1}]}
EOF
if start_ctld old --state "$tmp/old.state"; then
    expect "a format 1 state file: read, its switch has the default 64 slots" 200 '"capacity":64' -- \
        GET /v1/slots "${auth[@]}"
    expect "without --fabric a grant by ranks is a 400 naming --fabric" 400 "--fabric" -- \
        POST /v1/allocations "${auth[@]}" --body '{"job":"A","comm":"c","ranks":"all"}'
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
else
    fail "loom-ctld reads a format 1 state file" "$(flat "$tmp/old.err")"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
