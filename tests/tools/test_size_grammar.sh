#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tools' one size grammar (tools/common/size_grammar.hh), end to end (TAP): one table of
# cases, each given to loom-bench (-b SIZE -e 1: its refusal names the size it read) and to
# loom-sim (predict --bytes SIZE --json: the bytes it predicts for); both must read the same
# number, or both refuse. No communicator: milliseconds per case.
#
# Usage: test_size_grammar.sh PATH/TO/loom-bench PATH/TO/loom-sim     (Meson passes both)
set -u

BENCH=${1:?usage: test_size_grammar.sh PATH/TO/loom-bench PATH/TO/loom-sim}
SIM=${2:?usage: test_size_grammar.sh PATH/TO/loom-bench PATH/TO/loom-sim}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

# TEXT BYTES ("bad": both tools refuse it, exit 2). K, M, G, T and KiB… are 1024-based (as
# nccl-tests), KB, MB, GB, TB 1000-based; units in any case; a trailing B is bytes.
cases="
8 8
8B 8
1K 1024
1k 1024
1KB 1000
1kb 1000
1KiB 1024
1kib 1024
16M 16777216
16MB 16000000
16MiB 16777216
1G 1073741824
1GB 1000000000
1GiB 1073741824
1.5K 1536
64M 67108864
lots bad
1X bad
-1K bad
0.5 bad
1.5 bad
"

# bench_reads TEXT: the size loom-bench read (from "-b N is larger than -e 1"), or "bad".
bench_reads() {
    local err
    err=$("$BENCH" allreduce -b "$1" -e 1 2>&1 >/dev/null)
    if [[ "$err" =~ ^loom-bench:\ -b\ ([0-9]+)\ is\ larger\ than\ -e\ 1$ ]]; then
        echo "${BASH_REMATCH[1]}"
    elif [[ "$err" == "loom-bench: -b"* ]] && [ "$(echo "$err" | wc -l)" -eq 1 ]; then
        echo bad
    else
        echo "unexpected: $err"
    fi
}

# sim_reads TEXT: the bytes loom-sim predicts for, or "bad" (exit 2, one line naming --bytes).
sim_reads() {
    local out rc
    out=$("$SIM" predict --collective allreduce --algorithm ring --ranks 4 --bytes "$1" --json \
        2>"$tmp/sim.err")
    rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["bytes"])'
    elif [ "$rc" -eq 2 ] && grep -q -F "loom-sim: --bytes" "$tmp/sim.err"; then
        echo bad
    else
        echo "unexpected (exit $rc): $(head -c 200 "$tmp/sim.err")"
    fi
}

while read -r text want; do
    [ -z "$text" ] && continue
    got_bench=$(bench_reads "$text")
    got_sim=$(sim_reads "$text")
    if [ "$got_bench" = "$want" ] && [ "$got_sim" = "$want" ]; then
        pass "'$text' reads as $want in loom-bench and loom-sim"
    else
        fail "'$text' reads as $want in loom-bench and loom-sim" "loom-bench: $got_bench" \
            "loom-sim: $got_sim"
    fi
done <<<"$cases"

# --help says which base K is.
if "$BENCH" --help | grep -q -F "K/M/G/T (1024-based" && "$BENCH" --help | grep -q -F "KB/MB/GB/TB (1000-based)"; then
    pass "loom-bench --help says K is 1024 and KB 1000"
else
    fail "loom-bench --help says K is 1024 and KB 1000" "$("$BENCH" --help | grep -i size)"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
