#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the loom-ctld tests share (sourced after tap.sh, with CTLD and here set): the HTTP
# client, a token file and its auth flags, cleanup of the controllers started, start_ctld
# and expect.
http() { python3 "$here/ctld_http.py" "$@"; }
unset LOOM_CONTROLLER LOOM_CONTROLLER_TOKEN_FILE

pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

token=$tmp/token
printf '%s\n' 0123456789abcdef0123456789abcdef >"$token"
chmod 600 "$token"
auth=(--token-file "$token")

# start_ctld NAME ARGS...: loom-ctld in the background; sets $pid and $addr from its first
# stdout line (waits at most 5 s for it).
start_ctld() {
    local name=$1 line i
    shift
    "$CTLD" --listen 127.0.0.1:0 "${auth[@]}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    pid=$!
    pids+=("$pid")
    addr=
    for ((i = 0; i < 100; i++)); do
        line=$(head -n 1 "$tmp/$name.out" 2>/dev/null)
        if [[ "$line" == "loom-ctld listening on "* ]]; then
            addr=${line#loom-ctld listening on }
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    return 1
}

# expect NAME STATUS PATTERN -- ARGS...: one request whose answer has STATUS and PATTERN.
expect() {
    local name=$1 want=$2 pattern=$3 got
    shift 4
    got=$(http "$addr" "$@")
    if [[ "$got" == "$want "* ]] && [[ "$got" == *"$pattern"* ]]; then
        pass "$name"
    else
        fail "$name" "expected $want and '$pattern', got: ${got:0:300}"
    fi
}
