#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two builds of loom side by side (before and after a change), measured in one run with
# their launches interleaved, so that both see the same machine load: loom-bench allreduce
# and alltoall at N = 2, 4, 8 over shm and tcp, 8 B to 64 MiB (every 4th power of two).
# Each configuration runs ROUNDS times per build, alternating builds; a point's figure is
# the best p50 over the rounds (loom-bench --timing barrier, out of place: the figure every
# loom-bench has; a build without --timing measures it by default). Prints one table row per point: p50 before, after, and
# after/before; rows files stay under OUT (default results/compare).
# Usage: scripts/bench_compare.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2 rounds=${3:-2}
out=${OUT:-results/compare}
mkdir -p "$out"
rm -f "$out"/*.json

# run BUILD TAG N TRANSPORT COLLECTIVE ROUND RANGE-ARGS...
run() {
    local build=$1 tag=$2 n=$3 transport=$4 coll=$5 round=$6
    shift 6
    local json=$out/$tag-$coll-n$n-$transport-$round-from$2.json  # $2: the smallest size
    local bench=$build/tools/loom-bench/loom-bench timing=()
    "$bench" --help | grep -q -e '--timing' && timing=(--timing barrier --outofplace)
    if ! LOOM_CALIBRATE=off "$build/tools/loomrun/loomrun" -n "$n" --transport "$transport" \
        --timeout 300 -- "$bench" "$coll" --quiet --json "$json" "${timing[@]}" \
        "$@" >"${json%.json}.txt" 2>&1; then
        echo "failed: $tag $coll N=$n $transport; output in ${json%.json}.txt" >&2
        tail -n 5 "${json%.json}.txt" >&2
        return 1
    fi
}

start=$SECONDS
for transport in shm tcp; do
    for n in 2 4 8; do
        for coll in allreduce alltoall; do
            for round in $(seq "$rounds"); do
                for tag in before after; do
                    build=$before
                    [ "$tag" = after ] && build=$after
                    run "$build" "$tag" "$n" "$transport" "$coll" "$round" \
                        -b 8 -e 64K -f 4 -n 200 -w 20
                    run "$build" "$tag" "$n" "$transport" "$coll" "$round" \
                        -b 256K -e 64M -f 4 -n 8 -w 2
                done
            done
        done
    done
done

python3 - "$out" <<'EOF'
import glob, json, os, sys
best = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    tag = os.path.basename(path).split("-")[0]
    run = json.load(open(path))
    for row in run["rows"]:
        if row.get("inplace") or row.get("p50_us") is None:
            continue
        key = (run["transport"], run["nranks"], row["collective"], row["bytes"])
        cell = best.setdefault(key, {})
        cell[tag] = min(cell.get(tag, float("inf")), row["p50_us"])
print(f"{'transport':9} {'N':>2} {'collective':10} {'bytes':>10} {'before us':>11} "
      f"{'after us':>11} {'after/before':>12}")
for key in sorted(best):
    cell = best[key]
    b, a = cell.get("before"), cell.get("after")
    ratio = f"{a / b:12.2f}" if a and b else f"{'-':>12}"
    print(f"{key[0]:9} {key[1]:>2} {key[2]:10} {key[3]:>10} {b or 0:11.2f} {a or 0:11.2f} "
          f"{ratio}")
EOF
echo "($((SECONDS - start)) s; rows in $out/)"
