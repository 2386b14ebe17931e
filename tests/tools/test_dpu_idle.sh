#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An idle loom-dpu leaves the cores to the ranks (TAP): one DPU (--fabric ring:1, one host
# port nobody attaches to) without traffic uses under 5 % of a core over a second, from its
# utime + stime in /proc/PID/stat, sampled after it settled; with --busy-poll the same
# sampling sees it spin (over 20 %), which shows the measurement can tell the two apart.
# The emulation's memif ports have no rx interrupt, so this is the fallback's deep sleep
# (docs/tools/loom-dpu.md#idle-policy); where the ports have one, the router sleeps in epoll.
#
# Usage: test_dpu_idle.sh PATH/TO/loom-dpu        (Meson passes the built binary)
set -u

DPU=${1:?usage: test_dpu_idle.sh PATH/TO/loom-dpu}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
hz=$(getconf CLK_TCK)

# cpu_ticks PID: utime + stime (fields 14 and 15; the name in field 2 has no spaces here).
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# idle_percent NAME ARGS...: starts one loom-dpu, waits for its ready file, lets it settle
# 1.5 s, samples 2 s; prints the percentage of one core (integer), or fails NAME.
idle_percent() {
    local name=$1 dir pid a b
    shift
    dir="$tmp/$name"
    mkdir -m 700 "$dir"
    "$DPU" --node 0 --fabric ring:1 --dir "$dir" "$@" >"$dir/out" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        [ -e "$dir/node-0.ready" ] && break
        sleep 0.1
    done
    if [ ! -e "$dir/node-0.ready" ]; then
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        fail "$name: loom-dpu did not listen within 10 s" "$(head -c 400 "$dir/out")"
        return 1
    fi
    sleep 1.5
    a=$(cpu_ticks "$pid")
    sleep 2
    b=$(cpu_ticks "$pid")
    kill -TERM "$pid"
    wait "$pid"
    echo $(((b - a) * 100 / (2 * hz)))
}

if idle=$(idle_percent idle); then
    if [ "$idle" -lt 5 ]; then
        pass "idle loom-dpu uses little cpu ($idle % of a core)"
    else
        fail "idle loom-dpu uses little cpu" "$idle % of a core over 2 s without traffic"
    fi
fi
if busy=$(idle_percent busy --busy-poll); then
    if [ "$busy" -gt 20 ]; then
        pass "busy-poll loom-dpu spins ($busy % of a core)"
    else
        fail "busy-poll loom-dpu spins" "$busy % of a core: the sampling cannot tell idle from busy"
    fi
fi
echo "1..$n"
[ "$failures" -eq 0 ]
