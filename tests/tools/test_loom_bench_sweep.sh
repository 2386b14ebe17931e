#!/usr/bin/env bash
# loom-bench, the whole tool (TAP): -c finds 0 wrong elements for every collective, out of
# place and in place (4 ranks over shm); --algo all prints a row per algorithm and the
# comparison table; --csv and --json are well-formed; --baseline passes against its own
# --json and fails (exit 3) against a doctored one; bad arguments exit 2 with ONE line.
# Not a performance test: the figures are not judged. JSON and CSV are read with python3.
#
# Usage: test_loom_bench_sweep.sh PATH/TO/loomrun PATH/TO/loom-bench     (Meson passes both)
set -u

LOOMRUN=${1:?usage: test_loom_bench_sweep.sh PATH/TO/loomrun PATH/TO/loom-bench}
BENCH=${2:?usage: test_loom_bench_sweep.sh PATH/TO/loomrun PATH/TO/loom-bench}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

# bench ARGS...: loom-bench under loomrun, 4 ranks over shm; stdout $tmp/out, stderr
# $tmp/err, status $rc.
bench() {
    "$LOOMRUN" -n 4 --transport shm --timeout 60 -- "$BENCH" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}
# Rank 0's rows: "[0]  SIZE COUNT TYPE REDOP ROOT TIME ALGBW BUSBW #WRONG ALGO …".
rows() {
    grep -E '^\[0\] +[0-9]+ +[0-9]+ ' "$tmp/out"
}

# ---- -c, every collective, out of place and in place: 8 B .. 64 KiB by 8 ----------------
# (sendrecv has no in-place form: a send and a receive on one buffer race.)
for coll in allreduce broadcast reduce reduce_scatter allgather alltoall sendrecv; do
    places=("" --inplace)
    [ "$coll" = sendrecv ] && places=("")
    for place in "${places[@]}"; do
        name="$coll${place:+ $place} -c"
        bench "$coll" -b 8 -e 64K -f 8 -n 3 -w 1 -c $place
        sizes=$(rows | awk '{print $2}' | tr '\n' ' ')
        wrong=$(rows | awk '{print $10}' | sort -u | tr '\n' ' ')
        if [ "$rc" -ne 0 ]; then
            fail "$name exits 0" "exit $rc" "$(head -c 600 "$tmp/err")"
        elif [ "$wrong" != "0 " ] || [ -z "$sizes" ]; then
            fail "$name: #wrong is 0 in every row" "sizes: $sizes" "#wrong: $wrong"
        else
            pass "$name: exits 0, #wrong 0 in every row ($sizes)"
        fi
    done
done

# ---- --algo all, with --csv and --json ---------------------------------------------------
bench allreduce -b 8 -e 64K -f 8 -n 3 -w 1 -c --algo all --csv "$tmp/a.csv" --json "$tmp/a.json"
cp "$tmp/out" "$tmp/all.out"
if [ "$rc" -eq 0 ]; then
    pass "allreduce --algo all exits 0"
else
    fail "allreduce --algo all exits 0" "exit $rc" "$(head -c 600 "$tmp/err")"
fi
algos=$(rows | awk '{print $11}' | sort -u | tr '\n' ' ')
table=$(grep -A1 -F "'*' the fastest" "$tmp/all.out" | tail -n 1)
missing=""
for a in $algos; do
    [[ " $table " == *" $a "* ]] || missing="$missing $a"
done
if [[ " $algos " == *" ring "* && " $algos " == *" recursive-doubling "* ]] && [ -z "$missing" ]; then
    pass "--algo all: rows and a comparison column for every algorithm ($algos)"
else
    fail "--algo all: rows and a comparison column for every algorithm" "rows: $algos" \
        "table header: $table" "missing:$missing"
fi
table_rows=$(sed -n "/'\*' the fastest/,\$p" "$tmp/all.out" | grep -c -E '^\[0\] +[0-9]+ .*\*')
if [ "$table_rows" -eq 5 ]; then
    pass "--algo all: the comparison has 5 sizes, each with a fastest '*'"
else
    fail "--algo all: the comparison has 5 sizes, each with a fastest '*'" \
        "$(sed -n "/'\*' the fastest/,\$p" "$tmp/all.out")"
fi

header='collective,nranks,algo,tuner_choice,bytes,count,dtype,op,root,inplace,mean_us,p50_us,p99_us,algbw_GBps,busbw_GBps,wrong,predicted_us,sent_bytes_per_rank'
if [ -f "$tmp/a.csv" ] && [ "$(head -n 1 "$tmp/a.csv")" = "$header" ]; then
    pass "--csv: the header is exact"
else
    fail "--csv: the header is exact" "$(head -n 1 "$tmp/a.csv" 2>&1)"
fi
nrows=$(rows | wc -l)
if python3 - "$tmp/a.csv" "$nrows" <<'EOF'; then
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
for r in rows:
    assert r["collective"] == "allreduce" and int(r["nranks"]) == 4 and r["algo"]
    assert int(r["bytes"]) > 0 and int(r["count"]) > 0 and int(r["wrong"]) == 0
    for f in ("mean_us", "p50_us", "p99_us", "algbw_GBps", "busbw_GBps"):
        assert float(r[f]) >= 0, f
    for f in ("predicted_us", "sent_bytes_per_rank"):
        assert r[f] == "" or float(r[f]) >= 0, f
EOF
    pass "--csv: one parsable row per printed row ($nrows)"
else
    fail "--csv: one parsable row per printed row ($nrows)" "$(head -c 600 "$tmp/a.csv")"
fi
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["collective"] == "allreduce" and d["nranks"] == 4
assert d["transport"] == "shm" and d["host"] and d["date"]
assert len(d["rows"]) == int(sys.argv[2])
assert all(r["p50_us"] > 0 and r["wrong"] == 0 for r in d["rows"])
' "$tmp/a.json" "$nrows"; then
    pass "--json: parses, names the run, holds every row"
else
    fail "--json: parses, names the run, holds every row" "$(head -c 600 "$tmp/a.json")"
fi

# ---- --baseline ---------------------------------------------------------------------------
# Against its own --json a run may be slower, so the same figures are compared: the doctored
# file keeps every point 100 times faster, which no run beats.
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    r["p50_us"] /= 100
json.dump(d, open(sys.argv[2], "w"))
' "$tmp/a.json" "$tmp/fast.json"
bench allreduce -b 8 -e 64K -f 8 -n 3 -w 1 --algo all --baseline "$tmp/a.json" --tolerance 1e6
if [ "$rc" -eq 0 ] && grep -q -E '^\[0\] # baseline: 0 slower' "$tmp/out"; then
    pass "--baseline against its own --json (generous tolerance) exits 0"
else
    fail "--baseline against its own --json (generous tolerance) exits 0" "exit $rc" \
        "$(grep -F '# baseline' "$tmp/out")" "$(head -c 300 "$tmp/err")"
fi
bench allreduce -b 8 -e 64K -f 8 -n 3 -w 1 --algo all --baseline "$tmp/fast.json"
if [ "$rc" -eq 3 ] && grep -q -E '^\[0\] # slower than the baseline: allreduce ' "$tmp/out"; then
    pass "--baseline against a 100x faster baseline exits 3 and names the points"
else
    fail "--baseline against a 100x faster baseline exits 3 and names the points" "exit $rc" \
        "$(grep -F '# baseline' "$tmp/out")" "$(head -c 300 "$tmp/err")"
fi

# ---- bad arguments: exit 2, one line on stderr, no communicator needed ------------------
# expect_bad NAME PATTERN ARGS...: loom-bench ARGS exits 2 with one line naming PATTERN.
expect_bad() {
    expect_refusal "$1" 2 "$2" "$BENCH" "${@:3}"
}
expect_bad "unknown collective exits 2" "unknown collective 'sendrecb'" sendrecb
expect_bad "sendrecv --inplace exits 2" "--inplace: loom has no in-place send/recv" \
    sendrecv --inplace
expect_bad "-r for sendrecv exits 2" "-r applies to broadcast and reduce" sendrecv -r 1
expect_bad "--tolerance without --baseline exits 2" "--tolerance applies to --baseline" \
    allreduce --tolerance 5
expect_bad "a bad --tolerance exits 2" "--tolerance 'x': expected a percentage" \
    allreduce --baseline "$tmp/a.json" --tolerance x
expect_bad "--plot without .png exits 2" "--plot 'p.svg': expected a file name ending in .png" \
    allreduce --plot p.svg
expect_bad "--json without a value exits 2" "--json needs a value" allreduce --json
expect_bad "a missing --baseline file exits 2" "--baseline $tmp/none.json: cannot open it" \
    allreduce --baseline "$tmp/none.json"
echo '{"rows": [{"collective": "allreduce"}]}' >"$tmp/bad.json"
expect_bad "a --baseline file without p50_us exits 2" "a row lacks" allreduce --baseline "$tmp/bad.json"
expect_bad "calibrate with a bad flag exits 2" "calibrate: unexpected argument '--fast'" \
    calibrate --fast

echo "1..$n"
[ "$failures" -eq 0 ]
