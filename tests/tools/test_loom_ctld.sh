#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The control plane's first slice end to end (TAP): loom-ctld as a real process on loopback
# (port 0) and loomctl against it. Join, heartbeat, leave; a member that stops heartbeating is
# down within three periods (500 ms each) and its next heartbeat is refused (410); the token
# (401, counted in /metrics), malformed, oversized, unknown and wrong-method requests and the
# rate limit (4xx, counted by reason, the server still serving), 80 malformed requests; kill -9
# and restart with the same --state keeps every member and lease; SIGTERM stops it cleanly; a
# token file others can read is refused at start; loomctl's verbs as a table and --json, its one-line errors and
# exit codes, and no hang against a dead or silent controller. With --fabric (the docs' example
# tree and torus:4x4): the fabric, routes, route tables and trees; a drained switch and one
# whose lease ran out are left out of the trees and routes (ranks cut, naming it), undrain
# puts it back, and a drain survives a restart.
#
# Usage: test_loom_ctld.sh PATH/TO/loom-ctld PATH/TO/loomctl    (Meson passes the binaries)
set -u

CTLD=${1:?usage: test_loom_ctld.sh PATH/TO/loom-ctld PATH/TO/loomctl}
CTL=${2:?usage: test_loom_ctld.sh PATH/TO/loom-ctld PATH/TO/loomctl}
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tap.sh
. "$here/tap.sh"
# shellcheck source=ctld_common.sh
. "$here/ctld_common.sh"

# flat FILE...: the files on one line, for a TAP comment.
flat() {
    cat "$@" 2>/dev/null | tr '\n' '|' | head -c 600
}

# snap_metrics: /metrics now (with the token), kept for metric.
snap_metrics() {
    http "$addr" GET /metrics "${auth[@]}" | tr ' ' '\n' >"$tmp/metrics"
}
# metric NAME: its value in the last snap_metrics.
metric() {
    grep -A1 -xF -- "$1" "$tmp/metrics" | tail -n 1
}

# field ANSWER KEY: a top-level string or number of a JSON answer (after its status); in
# bash, so the timed cases below lose no time to starting an interpreter.
field() {
    local re="\"$2\":(\"([^\"]*)\"|([0-9]+))"
    [[ "$1" =~ $re ]] && echo "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}

# --- refused at start ---------------------------------------------------------------------
"$CTLD" --version >"$tmp/out" 2>&1
if grep -q "^loom-ctld [0-9]" "$tmp/out"; then pass "--version"; else fail "--version" "$(flat "$tmp/out")"; fi
printf '%s\n' 0123456789abcdef0123456789abcdef >"$tmp/open_token"
chmod 644 "$tmp/open_token"
expect_refusal "a token file others can read is refused at start" 2 "chmod 600" \
    "$CTLD" --listen 127.0.0.1:0 --token-file "$tmp/open_token"
expect_refusal "a missing token file is refused at start" 2 "--token-file $tmp/none" \
    "$CTLD" --listen 127.0.0.1:0 --token-file "$tmp/none"
printf 'short\n' >"$tmp/short_token" && chmod 600 "$tmp/short_token"
expect_refusal "a short token is refused at start" 2 "at least 16" \
    "$CTLD" --listen 127.0.0.1:0 --token-file "$tmp/short_token"
expect_refusal "--token-file is required" 2 "--token-file" "$CTLD" --listen 127.0.0.1:0
expect_refusal "a bad --listen is refused" 2 "--listen" "$CTLD" --listen nowhere "${auth[@]}"
echo '{"members": 3' >"$tmp/bad.state"
expect_refusal "a --state file that is not loom-ctld's is refused" 1 "not JSON" \
    "$CTLD" --listen 127.0.0.1:0 "${auth[@]}" --state "$tmp/bad.state"

# --- membership ----------------------------------------------------------------------------
# The main server has a long period: nothing expires while the cases below run. The leases'
# expiry is timed on a second server with a 500 ms period (further down).
state=$tmp/ctld.state
if start_ctld main --heartbeat 10 --state "$state" --max-body 4096; then
    pass "loom-ctld prints the bound address on its first line ($addr)"
else
    fail "loom-ctld prints the bound address on its first line" "$(flat "$tmp/main.out" "$tmp/main.err")"
    echo "1..$n"
    exit 1
fi
[[ "$addr" == 127.0.0.1:* ]] && pass "listens on loopback by default" || fail "listens on loopback by default" "$addr"

joined=$(http "$addr" POST /v1/members "${auth[@]}" \
    --body '{"name":"node-a","kind":"host","addresses":["10.0.0.1:7000"]}')
if [[ "$joined" == "201 "* ]] && [ "$(field "$joined" heartbeat_ms)" = 10000 ]; then
    pass "join: 201 with an id, a lease and the heartbeat period"
else
    fail "join: 201 with an id, a lease and the heartbeat period" "$joined"
fi
id_a=$(field "$joined" id)
lease_a=$(field "$joined" lease)
expect "heartbeat renews the lease" 200 '"state":"up"' -- POST "/v1/members/$id_a/heartbeat" \
    "${auth[@]}" --body "{\"lease\":\"$lease_a\"}"
expect "GET /v1/members lists the member up" 200 '"name":"node-a"' -- GET /v1/members "${auth[@]}"
dpu=$(http "$addr" POST /v1/members "${auth[@]}" --body '{"name":"dpu-a","kind":"dpu","addresses":[]}')
sw=$(http "$addr" POST /v1/members "${auth[@]}" --body '{"name":"sw-0","kind":"switch","addresses":["tcp:127.0.0.1:9"]}')
id_sw=$(field "$sw" id)
expect "GET /v1/status counts members by kind" 200 '"dpu":1' -- GET /v1/status "${auth[@]}"
expect "leave: 200" 200 '"left":true' -- DELETE "/v1/members/$id_sw" "${auth[@]}"
expect "leave again: 404" 404 "no member $id_sw" -- DELETE "/v1/members/$id_sw" "${auth[@]}"
expect "a heartbeat of a member that left: 404" 404 "join first" -- \
    POST "/v1/members/$id_sw/heartbeat" "${auth[@]}" --body '{"lease":"x"}'
expect "a heartbeat with another lease: 410" 410 "join again" -- \
    POST "/v1/members/$id_a/heartbeat" "${auth[@]}" --body '{"lease":"not-the-lease"}'

# --- refusals ------------------------------------------------------------------------------
expect "no token: 401" 401 "no bearer token" -- GET /v1/members
expect "wrong token: 401" 401 "wrong bearer token" -- GET /v1/members --token 0123456789abcdef0123456789abcdeX
expect "a join without the token: 401" 401 "" -- POST /v1/members \
    --body '{"name":"intruder","kind":"host","addresses":[]}'
expect "/metrics without the token: 401" 401 "" -- GET /metrics
expect "malformed JSON: 400 with a reason" 400 "not JSON" -- POST /v1/members "${auth[@]}" --body '{"name":'
expect "a missing field: 400 naming it" 400 "missing field 'kind'" -- POST /v1/members "${auth[@]}" \
    --body '{"name":"n","addresses":[]}'
expect "a wrong kind: 400" 400 "host, dpu or switch" -- POST /v1/members "${auth[@]}" \
    --body '{"name":"n","kind":"router","addresses":[]}'
expect "a body over --max-body: 413" 413 "" -- POST /v1/members "${auth[@]}" --body-bytes 10000
expect "an unknown path: 404" 404 "no such path" -- GET /v1/nothing "${auth[@]}"
expect "an unknown path without the token: 401, not 404" 401 "no bearer token" -- GET /v1/nothing
expect "a wrong method: 405" 405 "not allowed" -- PUT /v1/members "${auth[@]}" --body '{}'
expect "DELETE on /v1/status: 405" 405 "allowed: GET" -- DELETE /v1/status "${auth[@]}"
got=$(http "$addr" RAW 'NOT A REQUEST\r\n\r\n')
[ "$got" = 400 ] && pass "a malformed request line: 400" || fail "a malformed request line: 400" "$got"
# A path that is not UTF-8, echoed in the refusal: once it ended loom-ctld (the JSON writer
# threw; found by fuzz_ctld_api, whose corpus keeps the input).
got=$(http "$addr" RAW "GET /v1/\\xbfnothing HTTP/1.1\r\nAuthorization: Bearer $(cat "$token")\r\n\r\n")
[ "$got" = 404 ] && pass "a path that is not UTF-8: 404, the server still up" ||
    fail "a path that is not UTF-8: 404" "$got"
expect "the server still serves after the refusals" 200 '"api":"v1"' -- GET /v1/status "${auth[@]}"
snap_metrics
[ "$(metric 'loom_ctld_refused_total{reason="unauthorized"}')" = 5 ] &&
    pass "/metrics counts the 401s" ||
    fail "/metrics counts the 401s" "$(flat "$tmp/metrics")"
ok=1
for want in bad_request:4 too_large:1 not_found:4 method_not_allowed:2 gone:1; do
    got=$(metric "loom_ctld_refused_total{reason=\"${want%%:*}\"}")
    [ "$got" = "${want#*:}" ] || { ok=0; fail "/metrics counts refusals by reason" "${want%%:*}: $got, expected ${want#*:}"; }
done
[ $ok = 1 ] && pass "/metrics counts refusals by reason"
if [ "$(metric 'loom_ctld_members{kind="host",state="up"}')" = 1 ] &&
    [ "$(metric 'loom_ctld_members{kind="dpu",state="up"}')" = 1 ] &&
    [ "$(metric 'loom_ctld_members{kind="switch",state="up"}')" = 0 ] &&
    [ "$(metric loom_ctld_joins_total)" = 3 ] && [ "$(metric loom_ctld_leaves_total)" = 1 ]; then
    pass "/metrics: members by kind and state, joins, leaves"
else
    fail "/metrics: members by kind and state, joins, leaves" "$(flat "$tmp/metrics")"
fi

# --- loomctl ---------------------------------------------------------------------------------
"$CTL" status --controller "$addr" "${auth[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && grep -q "^members: 2 (up 2, down 0; host 1, dpu 1, switch 0)" "$tmp/out"; then
    pass "loomctl status: a table"
else
    fail "loomctl status: a table" "exit $rc" "$(flat "$tmp/out" "$tmp/err")"
fi
"$CTL" status --json --controller "$addr" "${auth[@]}" >"$tmp/out" 2>"$tmp/err"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["members"]["total"] != 2)' "$tmp/out"; then
    pass "loomctl status --json"
else
    fail "loomctl status --json" "$(flat "$tmp/out" "$tmp/err")"
fi
LOOM_CONTROLLER=$addr LOOM_CONTROLLER_TOKEN_FILE=$token "$CTL" members >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && head -n 1 "$tmp/out" | grep -q "^ID  *NAME  *KIND  *STATE" &&
    grep -q "node-a  *host  *up .*10.0.0.1:7000" "$tmp/out" && grep -q "dpu-a  *dpu  *up" "$tmp/out"; then
    pass "loomctl members: a table (controller and token from LOOM_CONTROLLER*)"
else
    fail "loomctl members: a table (controller and token from LOOM_CONTROLLER*)" "exit $rc" "$(flat "$tmp/out" "$tmp/err")"
fi
"$CTL" members --json --controller "$addr" "${auth[@]}" >"$tmp/out" 2>"$tmp/err"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(sorted(m["name"] for m in d["members"]) != ["dpu-a","node-a"])' "$tmp/out"; then
    pass "loomctl members --json"
else
    fail "loomctl members --json" "$(flat "$tmp/out" "$tmp/err")"
fi
printf '%s\n' 0123456789abcdef0123456789abcdeX >"$tmp/wrong_token" && chmod 600 "$tmp/wrong_token"
expect_refusal "loomctl with the wrong token: exit 1, the controller's reason" 1 "HTTP 401" \
    "$CTL" status --controller "$addr" --token-file "$tmp/wrong_token"
expect_refusal "loomctl without a controller: exit 2" 2 "no controller" \
    "$CTL" members "${auth[@]}"
expect_refusal "loomctl without a verb: exit 2" 2 "" "$CTL" --controller "$addr" "${auth[@]}"
expect_refusal "loomctl with an unknown verb: exit 2" 2 "" "$CTL" frobnicate "${auth[@]}"

# Garbage last on this server (its refusals would blur the counts above).
got=$(http "$addr" GARBAGE 80)
if kill -0 "$pid" 2>/dev/null && [[ "$(http "$addr" GET /v1/status "${auth[@]}")" == "200 "* ]]; then
    pass "80 malformed requests (random bytes, bad lengths and chunks, huge lines): no crash, still serving ($got of them answered with a status, the others closed)"
else
    fail "80 malformed requests: no crash, still serving" "answered: $got" "$(flat "$tmp/main.err")"
fi

# --- restart -------------------------------------------------------------------------------
kill -9 "$pid"
wait "$pid" 2>/dev/null
old_addr=$addr
# A long period here: the restart's grace (three periods) must outlast the checks below
# on a loaded machine; expiry itself is timed further down.
if start_ctld restarted --heartbeat 2 --state "$state"; then
    members=$(http "$addr" GET /v1/members "${auth[@]}" | tr -d ' ')
    if grep -q '"name":"node-a","state":"up"' <<<"$members" &&
        grep -q '"name":"dpu-a","state":"up"' <<<"$members"; then
        pass "kill -9 and restart with the same --state: every member is there"
    else
        fail "kill -9 and restart with the same --state: every member is there" "${members:0:400}"
    fi
    expect "a member resumes its lease after the restart" 200 '"state":"up"' -- \
        POST "/v1/members/$id_a/heartbeat" "${auth[@]}" --body "{\"lease\":\"$lease_a\"}"
    joined=$(http "$addr" POST /v1/members "${auth[@]}" --body '{"name":"node-b","kind":"host","addresses":[]}')
    id_b=$(field "$joined" id)
    [ "$id_b" -gt "$id_sw" ] && pass "ids are not reused after a restart" || fail "ids are not reused after a restart" "$joined"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    if [ $rc = 0 ] && grep -q "^loom-ctld stopped" "$tmp/restarted.out" && grep -q node-b "$state"; then
        pass "SIGTERM: a clean stop (exit 0), the state on disk"
    else
        fail "SIGTERM: a clean stop (exit 0), the state on disk" "exit $rc" "$(flat "$tmp/restarted.err")"
    fi
else
    fail "restart with the same --state" "$(flat "$tmp/restarted.err")"
fi

# --- leases expire: a 500 ms period --------------------------------------------------------
fast_state=$tmp/fast.state
if start_ctld fast --heartbeat 0.5 --state "$fast_state"; then
    joined=$(http "$addr" POST /v1/members "${auth[@]}" \
        --body '{"name":"node-a","kind":"host","addresses":["10.0.0.1:7000"]}')
    id_a=$(field "$joined" id)
    lease_a=$(field "$joined" lease)
    http "$addr" POST /v1/members "${auth[@]}" --body '{"name":"dpu-a","kind":"dpu","addresses":[]}' >/dev/null
    # node-a heartbeats every 100 ms for 2 s (in one process: on time); dpu-a never does.
    http "$addr" POST "/v1/members/$id_a/heartbeat" "${auth[@]}" --body "{\"lease\":\"$lease_a\"}" \
        --repeat 20 --interval 0.1 >"$tmp/beats"
    members=$(http "$addr" GET /v1/members "${auth[@]}" | tr -d ' ')
    if [ "$(grep -c '^200 ' "$tmp/beats")" = 20 ] && grep -q '"name":"node-a","state":"up"' <<<"$members" &&
        grep -q '"name":"dpu-a","state":"down"' <<<"$members"; then
        pass "a member that heartbeats stays up; one that does not is down after three periods"
    else
        fail "a member that heartbeats stays up; one that does not is down after three periods" \
            "$(flat "$tmp/beats")" "${members:0:400}"
    fi
    # node-a stops: down three periods (1.5 s) after its last heartbeat, within the sweep's
    # quarter period and the poll (a loaded machine may add a period); never before.
    ms=$(http "$addr" DOWN_AFTER "$id_a" "$lease_a" node-a "${auth[@]}")
    if [[ "$ms" =~ ^[0-9]+$ ]] && [ "$ms" -ge 1450 ] && [ "$ms" -le 2500 ]; then
        pass "a member that stops heartbeating is down within three periods (${ms} ms; 1.5 s + the sweep)"
    else
        fail "a member that stops heartbeating is down within three periods" "down after: $ms ms"
    fi
    expect "a heartbeat after down: 410" 410 "is down" -- POST "/v1/members/$id_a/heartbeat" \
        "${auth[@]}" --body "{\"lease\":\"$lease_a\"}"
    snap_metrics
    if [ "$(metric loom_ctld_leases_expired_total)" = 2 ] &&
        [ "$(metric 'loom_ctld_refused_total{reason="gone"}')" = 1 ] &&
        [ "$(metric 'loom_ctld_members{kind="dpu",state="down"}')" = 1 ] &&
        [ "$(metric 'loom_ctld_members{kind="host",state="down"}')" = 1 ]; then
        pass "/metrics: expired leases, the 410, members down by kind"
    else
        fail "/metrics: expired leases, the 410, members down by kind" "$(flat "$tmp/metrics")"
    fi
    rejoined=$(http "$addr" POST /v1/members "${auth[@]}" \
        --body '{"name":"node-a","kind":"host","addresses":["10.0.0.1:7000"]}')
    if [[ "$rejoined" == "201 "* ]] && [ "$(field "$rejoined" id)" = "$id_a" ] &&
        [ "$(field "$rejoined" lease)" != "$lease_a" ]; then
        pass "a down member rejoins under its id with a new lease"
    else
        fail "a down member rejoins under its id with a new lease" "$rejoined"
    fi
    lease_a=$(field "$rejoined" lease)
    # Killed right after a heartbeat, so node-a is up on disk; restarted with a long period,
    # so its fresh grace outlasts the check on a slow machine.
    expect "the new lease renews" 200 '"state":"up"' -- POST "/v1/members/$id_a/heartbeat" \
        "${auth[@]}" --body "{\"lease\":\"$lease_a\"}"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    if start_ctld fast_again --heartbeat 5 --state "$fast_state"; then
        members=$(http "$addr" GET /v1/members "${auth[@]}" | tr -d ' ')
        if grep -q '"name":"node-a","state":"up"' <<<"$members" &&
            grep -q '"name":"dpu-a","state":"down"' <<<"$members"; then
            pass "kill -9 and restart: a down member stays down, an up one gets a fresh grace"
        else
            fail "kill -9 and restart: a down member stays down, an up one gets a fresh grace" "${members:0:400}"
        fi
        kill -TERM "$pid"
        wait "$pid" 2>/dev/null
    else
        fail "restart of the 500 ms server" "$(flat "$tmp/fast_again.err")"
    fi
else
    fail "a server with a 500 ms period starts" "$(flat "$tmp/fast.err")"
fi

# --- the fabric: routes, trees, drain -----------------------------------------------------
# docs/fabric-example.json: h0, h1 under leaf0; h2, h3 under leaf1; both under spine.
example=$here/../../docs/fabric-example.json
if start_ctld plain; then
    expect "without --fabric: /v1/trees is 404 naming --fabric" 404 "holds no fabric" -- \
        GET /v1/trees "${auth[@]}"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
else
    fail "a server without --fabric starts" "$(flat "$tmp/plain.err")"
fi
expect_refusal "a --fabric that is neither a shape nor a file is refused at start" 1 "--fabric" \
    "$CTLD" --listen 127.0.0.1:0 "${auth[@]}" --fabric torus:0x4
fabric_state=$tmp/fabric.state
if start_ctld fabric --heartbeat 0.5 --fabric "$example" --state "$fabric_state"; then
    ctl=("$CTL" --controller "$addr" "${auth[@]}")
    expect "GET /v1/fabric: every node in service" 200 '"service":"in service"' -- \
        GET /v1/fabric "${auth[@]}"
    "${ctl[@]}" trees >"$tmp/trees" 2>&1
    if grep -q "^tree spine, ranks 0,1,2,3" "$tmp/trees" && grep -q "^    leaf1  ranks 2,3" "$tmp/trees"; then
        pass "loomctl trees: the declared tree, ranks under each leaf"
    else
        fail "loomctl trees: the declared tree, ranks under each leaf" "$(flat "$tmp/trees")"
    fi
    "${ctl[@]}" routes h0 h3 >"$tmp/route" 2>&1
    if grep -q "^h0 -> h3: 4 hops, shortest path" "$tmp/route" && grep -q "spine" "$tmp/route"; then
        pass "loomctl routes h0 h3: four hops over the spine"
    else
        fail "loomctl routes h0 h3: four hops over the spine" "$(flat "$tmp/route")"
    fi
    leaf=$(http "$addr" POST /v1/members "${auth[@]}" --body '{"name":"leaf1","kind":"switch","addresses":[]}')
    id_leaf=$(field "$leaf" id)
    "${ctl[@]}" drain leaf1 >"$tmp/drain" 2>&1
    rc=$?
    "${ctl[@]}" trees --ranks all >"$tmp/trees" 2>&1
    if [ $rc = 0 ] && grep -q "member leaf1 drained" "$tmp/drain" &&
        grep -q "^cut: rank 2: leaf1 is drained" "$tmp/trees" &&
        grep -q "cannot reduce in one tree: rank 2 has no in-network path: leaf1 is drained" "$tmp/trees"; then
        pass "loomctl drain leaf1: ranks 2 and 3 are cut, the job is told why"
    else
        fail "loomctl drain leaf1: ranks 2 and 3 are cut, the job is told why" "$(flat "$tmp/drain" "$tmp/trees")"
    fi
    "${ctl[@]}" members >"$tmp/members" 2>&1
    grep -q "leaf1 .*up,drained" "$tmp/members" && pass "loomctl members shows the drain" ||
        fail "loomctl members shows the drain" "$(flat "$tmp/members")"
    "${ctl[@]}" routes h0 h3 --json >"$tmp/route" 2>&1
    grep -q '"reachable": false' "$tmp/route" && pass "a route through a drained switch is unreachable, saying why" ||
        fail "a route through a drained switch is unreachable, saying why" "$(flat "$tmp/route")"
    "${ctl[@]}" undrain "$id_leaf" >/dev/null 2>&1
    "${ctl[@]}" trees --ranks 0,3 >"$tmp/trees" 2>&1
    if grep -q "these ranks reduce in tree spine" "$tmp/trees" && ! grep -q "^cut" "$tmp/trees"; then
        pass "loomctl undrain (by id): the tree is whole again"
    else
        fail "loomctl undrain (by id): the tree is whole again" "$(flat "$tmp/trees")"
    fi
    expect_refusal "loomctl drain of an unknown member: exit 1, one line" 1 "no member named 'leaf9'" \
        "${ctl[@]}" drain leaf9
    expect "a route needs both ends" 400 "from=NODE&to=NODE" -- GET "/v1/routes?from=h0" "${auth[@]}"
    expect "a route to an unknown node: 404" 404 "no node 'h9'" -- GET "/v1/routes?from=h0&to=h9" "${auth[@]}"
    expect "?ranks= out of range: 400" 400 "ranks must be" -- GET "/v1/trees?ranks=0,7" "${auth[@]}"
    expect "POST on /v1/trees: 405" 405 "allowed: GET" -- POST /v1/trees "${auth[@]}" --body '{}'
    expect "the fabric paths need the token too" 401 "no bearer token" -- GET /v1/trees
    # leaf1 never heartbeats: after three periods it is down, and the trees follow.
    for _ in $(seq 60); do
        http "$addr" GET /v1/trees "${auth[@]}" | grep -q '"because":"leaf1 is down"' && break
        sleep 0.1
    done
    "${ctl[@]}" trees >"$tmp/trees" 2>&1
    grep -q "^cut: rank 3: leaf1 is down" "$tmp/trees" && pass "a switch whose lease ran out is left out of the trees" ||
        fail "a switch whose lease ran out is left out of the trees" "$(flat "$tmp/trees")"
    "${ctl[@]}" drain leaf1 >/dev/null 2>&1
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
    if start_ctld fabric_again --heartbeat 0.5 --fabric "$example" --state "$fabric_state"; then
        "$CTL" --controller "$addr" "${auth[@]}" members >"$tmp/members" 2>&1
        grep -q "leaf1 .*,drained" "$tmp/members" && pass "a drain survives a restart" ||
            fail "a drain survives a restart" "$(flat "$tmp/members")"
        kill -TERM "$pid"
        wait "$pid" 2>/dev/null
    else
        fail "restart of the fabric server" "$(flat "$tmp/fabric_again.err")"
    fi
else
    fail "loom-ctld --fabric starts" "$(flat "$tmp/fabric.err")"
fi
if start_ctld torus --fabric torus:4x4; then
    "$CTL" --controller "$addr" "${auth[@]}" routes r0 r10 >"$tmp/route" 2>&1
    "$CTL" --controller "$addr" "${auth[@]}" routes r0 --table >"$tmp/table" 2>&1
    if grep -q "^r0 -> r10: 4 hops, dimension-ordered (toward-plus ties, dateline VCs)" "$tmp/route" &&
        [ "$(grep -c '^[0-9]' "$tmp/table")" = 16 ]; then
        pass "on torus:4x4: a DOR route and a route table of 16 ranks"
    else
        fail "on torus:4x4: a DOR route and a route table of 16 ranks" "$(flat "$tmp/route" "$tmp/table")"
    fi
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
else
    fail "loom-ctld --fabric torus:4x4 starts" "$(flat "$tmp/torus.err")"
fi

# --- a dead or silent controller ----------------------------------------------------------
start=$(date +%s%N)
expect_refusal "loomctl against a dead controller: exit 1, one line" 1 "cannot connect" \
    "$CTL" status --controller "$old_addr" "${auth[@]}" --timeout 2
http 127.0.0.1:0 HANG 10 >"$tmp/hang.out" &
pids+=($!)
for _ in $(seq 50); do [ -s "$tmp/hang.out" ] && break; sleep 0.05; done
expect_refusal "loomctl against a controller that never answers: exit 1 after --timeout" 1 \
    "no answer" "$CTL" members --controller "$(head -n 1 "$tmp/hang.out")" "${auth[@]}" --timeout 1
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$elapsed_ms" -lt 5000 ] && pass "no hang: both in ${elapsed_ms} ms" || fail "no hang" "${elapsed_ms} ms"

# --- the rate limit ------------------------------------------------------------------------
if start_ctld limited --rate 5; then
    http "$addr" GET /v1/status "${auth[@]}" --repeat 20 >"$tmp/burst"
    limited=$(grep -c '^429 ' "$tmp/burst")
    served=$(grep -c '^200 ' "$tmp/burst")
    sleep 1.2
    if [ "$limited" -gt 0 ] && [ "$served" -ge 4 ] &&
        [[ "$(http "$addr" GET /v1/status "${auth[@]}")" == "200 "* ]] &&
        snap_metrics && [ "$(metric 'loom_ctld_refused_total{reason="rate_limited"}')" -ge "$limited" ]; then
        pass "over --rate: 429, counted; served again a second later"
    else
        fail "over --rate: 429, counted; served again a second later" "200: $served, 429: $limited"
    fi
else
    fail "a rate-limited server starts" "$(flat "$tmp/limited.err")"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
