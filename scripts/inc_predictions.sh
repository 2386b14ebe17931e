#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# In-network all-reduce (inc) against ring and dbt on star:N, N = 8, 64, 512: the predicted
# (closed form) and simulated (fabric/sim) time at α = 0.5 µs, α_switch = 0.15 µs,
# BW = 50 GB/s, for 8 B … 64 MiB, and where inc starts or stops winning against each.
#
# Usage: scripts/inc_predictions.sh [PATH/TO/loom-sim]
#   default: $LOOM_SIM, else build-c/, build/ under the repository (the first that exists).
#
# Segments (P). The runtime streams inc in 8 KiB packets (inc/client), so on the wire
# P = M / 8 KiB; the schedule's P is the granularity the simulator models and the closed form
# 2α_switch + (1+1/P)·M/BW uses. P is M / 8 KiB capped at 64: beyond 64 the 1/P term is under
# 1.6 % of M/BW, while the simulation's steps grow as N·P (512 ranks × 8192 segments at
# 64 MiB is 8 M steps, minutes instead of a second). The "inc@8K" column is the closed form
# at the uncapped P, i.e. what the runtime's chunking gives in the model. dbt runs with the
# same P (NCCL pipelines its trees in chunks too; unpipelined it would pay 2·log N·M/BW);
# ring runs unsegmented: its N blocks already pipeline it.
# Everything else is loom-sim's output (predict --json, run --json): no cost model here.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sim=${1:-${LOOM_SIM:-}}
if [ -z "$sim" ]; then
    for dir in build-c build; do
        if [ -x "$here/$dir/tools/loom-sim/loom-sim" ]; then
            sim="$here/$dir/tools/loom-sim/loom-sim"
            break
        fi
    done
fi
if [ -z "$sim" ] || [ ! -x "$sim" ]; then
    echo "inc_predictions.sh: no loom-sim (build it, or pass its path / set LOOM_SIM)" >&2
    exit 2
fi
command -v python3 >/dev/null || {
    echo "inc_predictions.sh: needs python3" >&2
    exit 2
}

exec python3 - "$sim" <<'EOF'
import json, subprocess, sys

SIM = sys.argv[1]
MODEL = ["--alpha", "0.5us", "--alpha-switch", "0.15us", "--bw", "50GB/s"]
RANKS = [8, 64, 512]
SIZES = [8 * 8**k for k in range(8)] + [64 << 20]  # 8 B … 16 MiB by ×8, then 64 MiB
ALGOS = ["inc", "ring", "dbt"]
CHUNK_BYTES, P_CAP = 8 << 10, 64


def segments(algo, size_bytes, uncapped=False):
    if algo == "ring":
        return 1
    p = max(1, size_bytes // CHUNK_BYTES)
    return p if uncapped else min(p, P_CAP)


def loom_sim(verb, n, algo, size_bytes, p):
    cmd = [SIM, verb, "--collective", "allreduce", "--algorithm", algo, "--ranks", str(n),
           "--bytes", str(size_bytes), "--segments", str(p), "--json"] + MODEL
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc[0] if isinstance(doc, list) else doc


def predicted_s(n, algo, size_bytes, uncapped=False):
    d = loom_sim("predict", n, algo, size_bytes, segments(algo, size_bytes, uncapped))
    return d["time_s"] if d["applicable"] else None


def simulated_s(n, algo, size_bytes):
    return loom_sim("run", n, algo, size_bytes, segments(algo, size_bytes))["time_s"]


def size_text(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def us(t):
    return "-" if t is None else f"{t * 1e6:.3f}"


def crossovers(n, other, table, column):
    """Where inc's lead over `other` flips on the grid (column: 'pred' or 'sim')."""
    flips, prev = [], None
    for size in SIZES:
        a, b = table[(size, "inc")][column], table[(size, other)][column]
        wins = a < b
        if prev is not None and wins != prev[1]:
            what = "stops" if prev[1] else "starts"
            flips.append(f"inc {what} winning between {size_text(prev[0])} and "
                         f"{size_text(size)}{refine(n, other, prev[0], size)}")
        prev = (size, wins)
    if flips:
        return "; ".join(flips)
    return "inc wins everywhere" if prev[1] else f"{other} wins everywhere"


def refine(n, other, lo, hi):
    """The predicted crossover between two grid sizes, by bisection on whole bytes."""
    if column_mode != "pred":
        return ""
    lead_lo = predicted_s(n, "inc", lo) < predicted_s(n, other, lo)
    while hi - lo > max(1, lo // 256):
        mid = (lo + hi) // 2
        if (predicted_s(n, "inc", mid) < predicted_s(n, other, mid)) == lead_lo:
            lo = mid
        else:
            hi = mid
    return f" (closed forms: ≈ {size_text(hi)}, {hi} B)"


print(f"all-reduce on star:N, per-edge, α = 0.5 µs, α_switch = 0.15 µs, BW = 50 GB/s")
print(f"times in µs; inc and dbt with P = min(M/8KiB, {P_CAP}), ring P = 1; "
      "inc@8K: inc's closed form at P = M/8KiB")
for n in RANKS:
    table = {}
    print(f"\nN = {n} (star:{n})")
    head = f"  {'size':>8}" + "".join(f"  {a + ' pred':>12}  {a + ' sim':>12}" for a in ALGOS)
    print(head + f"  {'inc@8K':>10}  {'P':>3}  winner (sim)")
    for size in SIZES:
        row = f"  {size_text(size):>8}"
        best = None
        for algo in ALGOS:
            p, s = predicted_s(n, algo, size), simulated_s(n, algo, size)
            table[(size, algo)] = {"pred": p, "sim": s}
            row += f"  {us(p):>12}  {us(s):>12}"
            if best is None or s < best[1]:
                best = (algo, s)
        row += f"  {us(predicted_s(n, 'inc', size, True)):>10}  {segments('inc', size):>3}"
        print(row + f"  {best[0]}")
    for other in ("ring", "dbt"):
        column_mode = "pred"
        pred = crossovers(n, other, table, "pred")
        column_mode = "sim"
        sim = crossovers(n, other, table, "sim")
        print(f"  inc vs {other}: predicted: {pred}")
        print(f"  inc vs {other}: simulated: {sim}")
EOF
