#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom-bench, the whole tool (TAP): -c finds 0 wrong elements for every collective, out of
# place and in place (4 ranks over shm); the output is nccl-tests' (its header line, 13
# columns, type and op names, -d all, -o all, -c 0, the trailer's average bus bandwidth);
# --algo all prints a row per algorithm and the comparison table; --csv, --json and --plot
# are well-formed; --baseline passes against its own --json, fails (exit 3) against a
# doctored one and refuses (exit 2) another experiment; output paths are checked before the
# sweep; bad arguments exit 2 with ONE line.
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
# Rank 0's rows: "[0]  SIZE COUNT TYPE REDOP ROOT, then TIME ALGBW BUSBW #WRONG out of place
# ($7-$10) and in place ($11-$14), then loom's ALGO PRED P99 SENT ($15-$18)".
rows() {
    grep -E '^\[0\] +[0-9]+ +[0-9]+ ' "$tmp/out"
}

# ---- -c, every collective, out of place and in place: 8 B .. 64 KiB by 8 ----------------
# Both halves in one run; --inplace and --outofplace measure one, the other N/A. (sendrecv
# has no in-place form: a send and a receive on one buffer race; its in-place half is N/A.)
for coll in allreduce broadcast reduce reduce_scatter allgather alltoall sendrecv; do
    name="$coll -c"
    bench "$coll" -b 8 -e 64K -f 8 -n 3 -w 1 -c
    sizes=$(rows | awk '{print $2}' | tr '\n' ' ')
    wrong=$(rows | awk '{print $10 " " $14}' | sort -u | tr '\n' ' ')
    want="0 0 "
    [ "$coll" = sendrecv ] && want="0 N/A "
    if [ "$rc" -ne 0 ]; then
        fail "$name exits 0" "exit $rc" "$(head -c 600 "$tmp/err")"
    elif [ "$wrong" != "$want" ] || [ -z "$sizes" ]; then
        fail "$name: #wrong is $want in every row (out of place, in place)" "sizes: $sizes" \
            "#wrong: $wrong"
    else
        pass "$name: exits 0, #wrong $want in every row ($sizes)"
    fi
done
for half in --inplace --outofplace; do
    bench allreduce -b 8 -e 64K -f 8 -n 3 -w 1 -c "$half"
    wrong=$(rows | awk '{print $10 " " $14}' | sort -u | tr '\n' ' ')
    want="N/A 0 "
    [ "$half" = --outofplace ] && want="0 N/A "
    if [ "$rc" -eq 0 ] && [ "$wrong" = "$want" ]; then
        pass "allreduce $half: the other half is N/A ($want)"
    else
        fail "allreduce $half: the other half is N/A ($want)" "exit $rc" "#wrong: $wrong"
    fi
done

# ---- nccl-tests' format: header, 13 columns, names, -d all, -o all, trailer --------------
bench allreduce -b 8 -e 512 -f 8 -n 2 -w 1 -d all -o all --json "$tmp/all_types.json"
if [ "$rc" -eq 0 ] && grep -q -E '^\[0\] # nThread 1 nGpus 1 minBytes 8 maxBytes 512 step: 8\(factor\) warmup iters: 1 iters: 2 agg iters: 1 validation: 1 graph: 0$' "$tmp/out"; then
    pass "nccl-tests' first header line, its fields as there"
else
    fail "nccl-tests' first header line, its fields as there" "exit $rc" \
        "$(grep -m1 -F nThread "$tmp/out")" "$(head -c 300 "$tmp/err")"
fi
if grep -q -E '^\[0\] #  Rank  0 Group  0 Pid +[0-9]+ on ' "$tmp/out" &&
    grep -q -E '^\[0\] #  Rank  3 Group  0 Pid +[0-9]+ on ' "$tmp/out"; then
    pass "a device line per rank (nccl-tests' Using devices)"
else
    fail "a device line per rank (nccl-tests' Using devices)" "$(grep -F Rank "$tmp/out")"
fi
# 13 standard columns: SIZE COUNT TYPE REDOP ROOT, then TIME ALGBW BUSBW #WRONG twice.
bad_rows=$(rows | awk '!($2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $6 ~ /^-?[0-9]+$/ &&
    $7 ~ /^[0-9.]+$/ && $8 ~ /^[0-9.]+$/ && $9 ~ /^[0-9.]+$/ && $10 ~ /^[0-9]+$/ &&
    $11 ~ /^[0-9.]+$/ && $12 ~ /^[0-9.]+$/ && $13 ~ /^[0-9.]+$/ && $14 ~ /^[0-9]+$/ &&
    $15 ~ /^[a-z]/ && NF == 18)' | head -3)
if [ -z "$bad_rows" ] && [ "$(rows | wc -l)" -eq 150 ]; then
    pass "-d all -o all: 150 rows (10 types x 5 ops x 3 sizes) of 13 columns, then loom's 4"
else
    fail "-d all -o all: 150 rows (10 types x 5 ops x 3 sizes) of 13 columns, then loom's 4" \
        "rows: $(rows | wc -l)" "$bad_rows"
fi
types=$(rows | awk '{print $4}' | sort -u | tr '\n' ' ')
ops=$(rows | awk '{print $5}' | sort -u | tr '\n' ' ')
if [ "$types" = "bfloat16 double float half int32 int64 int8 uint32 uint64 uint8 " ] &&
    [ "$ops" = "avg max min prod sum " ]; then
    pass "nccl-tests' type and op names ($types/ $ops)"
else
    fail "nccl-tests' type and op names" "types: $types" "ops: $ops"
fi
if python3 - "$tmp/all_types.json" "$tmp/out" <<'PY'; then
import json, re, sys
rows = json.load(open(sys.argv[1]))["rows"]
avg = sum(r["busbw_GBps"] for r in rows) / len(rows)
text = open(sys.argv[2]).read()
m = re.search(r"^\[0\] # Avg bus bandwidth    : (\S+) $", text, re.M)
assert m and abs(float(m.group(1)) - avg) <= 1e-5 * max(avg, 1e-9), (m and m.group(1), avg)
assert re.search(r"^\[0\] # Out of bounds values : 0 OK$", text, re.M)
assert len(rows) == 300 and sum(r["inplace"] for r in rows) == 150
PY
    pass "trailer: 0 out of bounds, OK; avg bus bandwidth = mean over every row and both halves"
else
    fail "trailer: 0 out of bounds, OK; avg bus bandwidth = mean over every row and both halves" \
        "$(grep -F '# ' "$tmp/out" | tail -n 3)"
fi
bench reduce_scatter -b 8 -e 512 -f 8 -n 2 -w 1 -c 0
wrong=$(rows | awk '{print $10 " " $14}' | sort -u | tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ "$wrong" = "N/A N/A " ] &&
    grep -q -F "[0] # Out of bounds values : 0 (not checked)" "$tmp/out" &&
    grep -q -F "validation: 0 graph: 0" "$tmp/out"; then
    pass "-c 0: #wrong N/A in both halves, the trailer says not checked"
else
    fail "-c 0: #wrong N/A in both halves, the trailer says not checked" "exit $rc" "#wrong: $wrong"
fi
bench broadcast -b 8 -e 64 -f 8 -n 2 -w 1 -r all
roots=$(rows | awk '{print $6 "/" $5}' | sort -u | tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ "$roots" = "0/none 1/none 2/none 3/none " ]; then
    pass "broadcast -r all: every root, redop none"
else
    fail "broadcast -r all: every root, redop none" "exit $rc" "root/redop: $roots"
fi
bench alltoall -b 64 -e 64 -n 2 -w 1
if [ "$rc" -eq 0 ] && [ "$(rows | awk '{print $5 " " $6}')" = "none -1" ]; then
    pass "alltoall: redop none, root -1 (as nccl-tests)"
else
    fail "alltoall: redop none, root -1 (as nccl-tests)" "exit $rc" "$(rows)"
fi
bench allreduce -b 64 -e 64 -n 4 -w 1 --timing barrier -a 3
if [ "$rc" -eq 0 ] && [[ "$(rows | awk '{print $17}')" =~ ^[0-9.]+$ ]] &&
    grep -q -F "time = p50 (median)" "$tmp/out"; then
    pass "--timing barrier: time is the p50, the p99 column filled"
else
    fail "--timing barrier: time is the p50, the p99 column filled" "exit $rc" "$(rows)"
fi
bench allreduce -b 64 -e 64 -n 2 -w 1 --progress
if [ "$rc" -eq 0 ] && grep -q -F "[1/1] allreduce auto 64 B" "$tmp/err"; then
    pass "--progress: rank 0's progress line without a terminal"
else
    fail "--progress: rank 0's progress line without a terminal" "exit $rc" \
        "$(head -c 300 "$tmp/err")"
fi
bench allreduce -b 64 -e 64 -n 2 -w 1
if [ "$rc" -eq 0 ] && ! grep -q -F "[1/1]" "$tmp/err"; then
    pass "no terminal, no --progress: no progress line"
else
    fail "no terminal, no --progress: no progress line" "exit $rc" "$(head -c 300 "$tmp/err")"
fi

# ---- --algo all, with --csv and --json ---------------------------------------------------
bench allreduce -b 8 -e 64K -f 8 -n 3 -w 1 -c --algo all --csv "$tmp/a.csv" --json "$tmp/a.json"
cp "$tmp/out" "$tmp/all.out"
if [ "$rc" -eq 0 ]; then
    pass "allreduce --algo all exits 0"
else
    fail "allreduce --algo all exits 0" "exit $rc" "$(head -c 600 "$tmp/err")"
fi
algos=$(rows | awk '{print $15}' | sort -u | tr '\n' ' ')
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

header='collective,nranks,algo,tuner_choice,bytes,count,dtype,op,root,inplace,mean_us,p50_us,p99_us,algbw_GBps,busbw_GBps,wrong,predicted_us,sent_bytes_per_rank,time_us'
if [ -f "$tmp/a.csv" ] && [ "$(head -n 1 "$tmp/a.csv")" = "$header" ]; then
    pass "--csv: the header is exact"
else
    fail "--csv: the header is exact" "$(head -n 1 "$tmp/a.csv" 2>&1)"
fi
nrows=$(($(rows | wc -l) * 2))  # a printed row holds both halves
if python3 - "$tmp/a.csv" "$nrows" <<'EOF'; then
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
assert sorted(set(r["inplace"] for r in rows)) == ["0", "1"]
for r in rows:
    assert r["collective"] == "allreduce" and int(r["nranks"]) == 4 and r["algo"]
    assert int(r["bytes"]) > 0 and int(r["count"]) > 0 and int(r["wrong"]) == 0
    for f in ("mean_us", "time_us", "algbw_GBps", "busbw_GBps"):
        assert float(r[f]) >= 0, f
    for f in ("predicted_us", "sent_bytes_per_rank", "p50_us", "p99_us"):
        assert r[f] == "" or float(r[f]) >= 0, f
EOF
    pass "--csv: one parsable row per printed row and half ($nrows)"
else
    fail "--csv: one parsable row per printed row and half ($nrows)" "$(head -c 600 "$tmp/a.csv")"
fi
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["collective"] == "allreduce" and d["nranks"] == 4
assert d["transport"] == "shm" and d["host"] and d["date"]
assert "loom-bench allreduce -b 8 -e 64K" in d["command_line"]
e = d["experiment"]
assert e["nranks"] == 4 and e["transport"] == "shm" and e["iters"] == 3 and e["warmup"] == 1
assert e["timing"] == "loop" and e["loom_version"] and e["check"] is True
for k in ("fabric", "topology", "switch", "algo_env", "progress", "average"):
    assert k in e, k
assert len(d["rows"]) == int(sys.argv[2])
assert all(r["time_us"] > 0 and r["wrong"] == 0 for r in d["rows"])
assert all(r["dtype"] == "float" and r["op"] == "sum" and r["root"] == -1 for r in d["rows"])
' "$tmp/a.json" "$nrows"; then
    pass "--json: parses, records the experiment and the command line, holds every row"
else
    fail "--json: parses, records the experiment and the command line, holds every row" \
        "$(head -c 600 "$tmp/a.json")"
fi

# ---- --baseline ---------------------------------------------------------------------------
# Against its own --json a run may be slower, so the same figures are compared: the doctored
# file keeps every point 100 times faster, which no run beats.
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    r["time_us"] /= 100
json.dump(d, open(sys.argv[2], "w"))
' "$tmp/a.json" "$tmp/fast.json"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["experiment"]["loom_version"] = "0.0.1-old"
json.dump(d, open(sys.argv[2], "w"))
' "$tmp/a.json" "$tmp/old_version.json"
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

# Another experiment is refused before anything is measured, the difference named.
# refused NAME PATTERN LOOMRUN-ARGS -- BENCH-ARGS: exit 2, PATTERN on stderr, no row.
refused() {
    local name=$1 pattern=$2
    shift 2
    "$LOOMRUN" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q -F -- "$pattern" "$tmp/err" && [ -z "$(rows)" ]; then
        pass "$name"
    else
        fail "$name" "exit $rc" "$(head -c 300 "$tmp/err")" "$(rows | head -n 2)"
    fi
}
refused "--baseline of 4 ranks, run on 2: refused (exit 2), ranks named" \
    "a different experiment (ranks: baseline 4, this run 2)" \
    -n 2 --transport shm --timeout 60 -- "$BENCH" allreduce -b 8 -e 64K -f 8 -n 3 -w 1 \
    --baseline "$tmp/a.json"
refused "--baseline over shm, run over tcp: refused, transport named" \
    "(transport: baseline shm, this run tcp)" \
    -n 4 --transport tcp --timeout 60 -- "$BENCH" allreduce -b 8 -e 64K -f 8 -n 3 -w 1 \
    --baseline "$tmp/a.json"
refused "--baseline with other iterations: refused, -n named" \
    "(iterations (-n): baseline 3, this run 5)" \
    -n 4 --transport shm --timeout 60 -- "$BENCH" allreduce -b 8 -e 64K -f 8 -n 5 -w 1 \
    --baseline "$tmp/a.json"
refused "--baseline of float, run on double: refused, dtype named" \
    "(baseline: dtype float, op sum" \
    -n 4 --transport shm --timeout 60 -- "$BENCH" allreduce -b 8 -e 64K -f 8 -n 3 -w 1 \
    -d double --baseline "$tmp/a.json"
refused "--baseline of another loom version: refused, version named" \
    "(loom version: baseline 0.0.1-old" \
    -n 4 --transport shm --timeout 60 -- "$BENCH" allreduce -b 8 -e 64K -f 8 -n 3 -w 1 \
    --baseline "$tmp/old_version.json"

# ---- outputs: checked before the sweep; the plot has a title, labels and a legend --------
refused "--csv into a missing folder: refused before the sweep" \
    "--csv /nonexistent/x.csv: cannot create it in /nonexistent" \
    -n 2 --transport shm --timeout 60 -- "$BENCH" allreduce -b 8 -e 64K -f 8 -n 3 -w 1 \
    --csv /nonexistent/x.csv
refused "--json into a missing folder: refused before the sweep" "--json /nonexistent/x.json" \
    -n 2 --transport shm --timeout 60 -- "$BENCH" allreduce --json /nonexistent/x.json
refused "--plot into a missing folder: refused before the sweep" "--plot /nonexistent/x.png" \
    -n 2 --transport shm --timeout 60 -- "$BENCH" allreduce --plot /nonexistent/x.png
refused "--csv naming a directory: refused before the sweep" "--csv $tmp: a directory" \
    -n 2 --transport shm --timeout 60 -- "$BENCH" allreduce --csv "$tmp"
# One measured line (--outofplace): loom's prediction is drawn beside it.
bench allreduce -b 8 -e 64K -f 8 -n 2 -w 1 --outofplace --plot "$tmp/p.png"
if [ "$rc" -eq 0 ] && grep -q -E "^set title 'loom-bench allreduce, N = 4, shm" "$tmp/p.gp" &&
    grep -q -F "set xlabel 'size (bytes)'" "$tmp/p.gp" &&
    grep -q -F "set ylabel 'time per call (us, mean)'" "$tmp/p.gp" &&
    grep -q -F "set key " "$tmp/p.gp" &&
    grep -q -F "title 'predicted (loom''s model)'" "$tmp/p.gp" &&
    [ "$(grep -c -E "with linespoints title '" "$tmp/p.gp")" -ge 2 ]; then
    pass "--plot: the script has a title, axis labels with units and a titled line each"
else
    fail "--plot: the script has a title, axis labels with units and a titled line each" \
        "exit $rc" "$(head -c 400 "$tmp/p.gp" 2>&1)" "$(head -c 300 "$tmp/err")"
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "--plot: a PNG" "gnuplot not found (Debian: gnuplot-nox)"
elif [ -s "$tmp/p.png" ] && [ "$(head -c 4 "$tmp/p.png" | tail -c 3)" = "PNG" ]; then
    pass "--plot: a PNG"
else
    fail "--plot: a PNG" "$(ls -l "$tmp"/p.* 2>&1)"
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
expect_bad "--json without a value exits 2" "--json: 1 required TEXT missing" allreduce --json
expect_bad "a missing --baseline file exits 2" "--baseline $tmp/none.json: cannot open it" \
    allreduce --baseline "$tmp/none.json"
echo '{"rows": [{"collective": "allreduce"}]}' >"$tmp/bad.json"
expect_bad "a --baseline file without time_us exits 2" "a row lacks" allreduce --baseline "$tmp/bad.json"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
del d["experiment"]
json.dump(d, open(sys.argv[2], "w"))
' "$tmp/a.json" "$tmp/no_experiment.json"
expect_bad "a --baseline file without its experiment exits 2" "records no experiment" \
    allreduce --baseline "$tmp/no_experiment.json"
expect_bad "calibrate with a bad flag exits 2" \
    "calibrate: The following argument was not expected: --fast" calibrate --fast
expect_bad "-m above 1 exits 2" "-m '4': expected 1 (loom has no grouped calls" allreduce -m 4
expect_bad "-G 1 exits 2" "-G '1': expected 0 (CUDA graphs do not apply" allreduce -G 1
expect_bad "-c 2 exits 2" "-c '2': expected 0 or 1" allreduce -c 2
expect_bad "-o on a bad op exits 2" "-o 'mean': expected one of sum, prod" allreduce -o mean
expect_bad "-a 4 exits 2" "-a '4': expected 0 (rank 0), 1 (mean)" allreduce -a 4
expect_bad "--timing nonesuch exits 2" "--timing 'p90': expected loop or barrier" \
    allreduce --timing p90
expect_bad "-b 1KB -e 1 exits 2 naming 1000 bytes" "-b 1000 is larger than -e 1" \
    allreduce -b 1KB -e 1
if "$BENCH" --version | grep -q -E '^loom-bench [0-9]'; then
    pass "--version prints loom-bench and the version"
else
    fail "--version prints loom-bench and the version" "$("$BENCH" --version 2>&1 | head -n 2)"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
