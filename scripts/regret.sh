#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tuner's quality, measured: for each transport (shm, tcp) with N = 4 ranks, calibrate
# (loom-bench calibrate --thorough), then run every applicable all-reduce algorithm at every
# size from 8 B to 64 MiB (loom-bench --algo all) and compare the tuner's choice with the
# fastest measured one. Regret = p50 of the choice / p50 of the fastest − 1.
# Release build in build-bench; outputs in results/regret/. Several minutes on 2 cores.
# Usage: scripts/regret.sh [BUILD_DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-bench}
n=${2:-4}
out=results/regret
if [ ! -f "$build_dir/build.ninja" ]; then
    meson setup "$build_dir" --buildtype=release >/dev/null
fi
ninja -C "$build_dir" tools/loomrun/loomrun tools/loom-bench/loom-bench >/dev/null
mkdir -p "$out"
export LOOM_CALIBRATION_FILE="$PWD/$out/calibration.txt"
for transport in shm tcp; do
    "$build_dir/tools/loomrun/loomrun" -n "$n" --transport "$transport" --timeout 600 -- \
        "$build_dir/tools/loom-bench/loom-bench" calibrate --thorough |
        grep -v "^\[[1-9]" >"$out/calibrate-$transport.txt"
    "$build_dir/tools/loomrun/loomrun" -n "$n" --transport "$transport" --timeout 1800 -- \
        "$build_dir/tools/loom-bench/loom-bench" allreduce -b 8 -e 64M -f 2 -n 20 -w 3 \
        --timing barrier --outofplace -c 0 --algo all --csv "$out/allreduce-$transport-n$n.csv" >"$out/allreduce-$transport-n$n.txt"
done
python3 - "$out" "$n" <<'PY'
import csv, sys
out, n = sys.argv[1], sys.argv[2]
lines = ["| transport | size | tuner's choice | p50 µs | fastest | p50 µs | regret |",
         "| --- | --- | --- | --- | --- | --- | --- |"]
worst = {}
for transport in ("shm", "tcp"):
    rows = list(csv.DictReader(open(f"{out}/allreduce-{transport}-n{n}.csv")))
    for size in sorted({int(r["bytes"]) for r in rows}):
        at = [r for r in rows if int(r["bytes"]) == size]
        best = min(at, key=lambda r: float(r["p50_us"]))
        choice = [r for r in at if r["tuner_choice"] == "1"]
        if not choice:
            continue
        c = choice[0]
        regret = float(c["p50_us"]) / float(best["p50_us"]) - 1
        worst[transport] = max(worst.get(transport, 0), regret)
        unit = "B" if size < 1024 else "KiB" if size < 1 << 20 else "MiB"
        shown = size if size < 1024 else size >> 10 if size < 1 << 20 else size >> 20
        lines.append(f"| {transport} | {shown} {unit} | {c['algo']} | {float(c['p50_us']):.1f} | "
                     f"{best['algo']} | {float(best['p50_us']):.1f} | {regret * 100:.0f} % |")
open(f"{out}/regret.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
for t, w in worst.items():
    print(f"{t}: worst regret {w * 100:.0f} %")
PY
