#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The control plane at scale: starts loom-ctld on loopback (any free port, no rate limit, a
# member table large enough), then ctld-agents plays AGENTS agents joining and heartbeating
# every PERIOD seconds for DURATION seconds, and prints join time, heartbeat round trips
# (p50, p99) and loom-ctld's CPU and memory. docs/performance.md#control-plane quotes it.
# Usage: bench/ctld/run.sh [BUILD_DIR] [AGENTS] [DURATION] [PERIOD] [CONNECTIONS]
set -euo pipefail
build=${1:-build}
agents=${2:-4096}
duration=${3:-60}
period=${4:-1}
connections=${5:-8}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
chmod 600 "$tmp/token"
"$build/tools/loom-ctld/loom-ctld" --listen 127.0.0.1:0 --token-file "$tmp/token" --rate 0 \
    --heartbeat "$period" --max-members $((agents + 16)) --threads "$connections" \
    >"$tmp/ctld.out" 2>"$tmp/ctld.err" &
pid=$!
for _ in $(seq 100); do
    grep -q "listening on" "$tmp/ctld.out" 2>/dev/null && break
    sleep 0.05
done
addr=$(sed -n 's/^loom-ctld listening on //p' "$tmp/ctld.out")
[ -n "$addr" ] || { cat "$tmp/ctld.err" >&2; exit 1; }
echo "loom-ctld $addr (pid $pid): $agents agents, heartbeat every $period s for $duration s, $connections connections"
"$build/bench/ctld/ctld-agents" --controller "$addr" --token-file "$tmp/token" --agents "$agents" \
    --connections "$connections" --period "$period" --duration "$duration" --pid "$pid"
