#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/multinode's tables (run.sh calls it).

  report.py loom-csv FILE LIBRARY   loom-bench's --csv (rank 0) as raw.csv rows:
                                    library,collective,nranks,bytes,p50_us,p99_us
  report.py report DIR              DIR/raw.csv (and machine.txt) as markdown on stdout:
                                    per collective and N, the network table (loom tcp, ofi
                                    tcp;ofi_rxm, Open MPI tcp, ofi / loom tcp) and the memory
                                    table (loom shm, ofi shm, ofi / loom shm), median µs
"""
import csv
import sys

NETWORK = [("loom-tcp", "loom tcp"), ("ofi-tcp", "ofi tcp;ofi_rxm"), ("openmpi-tcp", "Open MPI tcp")]
MEMORY = [("loom-shm", "loom shm"), ("ofi-shm", "ofi shm")]
GOAL = 1.3  # the goal: ofi within 1.3x of loom tcp at every size


def loom_csv(path, library):
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["inplace"] != "0":
                continue
            print(f"{library},{row['collective']},{row['nranks']},{row['bytes']},"
                  f"{row['p50_us']},{row['p99_us']}")


def size_text(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def nearest(points, b):
    """The point of a library at b, or at the nearest size at most one step away (all-to-all
    sizes round to N floats, which differ slightly between harnesses)."""
    if b in points:
        return points[b]
    close = [k for k in points if abs(k - b) <= max(4 * 8, b // 8)]
    return points[min(close, key=lambda k: abs(k - b))] if close else None


def table(rows, coll, n, libs, base, label):
    points = {lib: {} for lib, _ in libs}
    for r in rows:
        if r["collective"] == coll and int(r["nranks"]) == n and r["library"] in points:
            points[r["library"]][int(r["bytes"])] = float(r["p50_us"])
    sizes = sorted(points[base]) or sorted({b for p in points.values() for b in p})
    if not sizes:
        return [], None
    other = libs[1][0]
    head = "| size | " + " | ".join(name for _, name in libs) + f" | {libs[1][1]} / {libs[0][1]} |"
    out = [f"**{coll}, N = {n}, {label}** (p50 µs)", "", head,
           "|" + " --- |" * (len(libs) + 2)]
    worst = None
    for b in sizes:
        cells = []
        for lib, _ in libs:
            v = nearest(points[lib], b)
            cells.append(f"{v:.1f}" if v is not None else "–")
        a, o = nearest(points[base], b), nearest(points[other], b)
        ratio = o / a if a and o else None
        if ratio is not None:
            worst = ratio if worst is None else max(worst, ratio)
        ratio_cell = f"{ratio:.2f}" if ratio is not None else "–"
        out.append(f"| {size_text(b)} | " + " | ".join(cells) + f" | {ratio_cell} |")
    out.append("")
    return out, worst


def report(directory):
    with open(f"{directory}/raw.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    lines = ["# Multi-node transports on one machine (network namespaces as hosts)", ""]
    try:
        with open(f"{directory}/machine.txt") as f:
            lines += ["```", f.read().rstrip(), "```", ""]
    except OSError:
        pass
    combos = sorted({(r["collective"], int(r["nranks"])) for r in rows})
    verdicts = []
    for coll, n in combos:
        t, worst = table(rows, coll, n, NETWORK, "loom-tcp", "across namespaces")
        lines += t
        if worst is not None:
            verdicts.append(f"- {coll} N = {n}: ofi tcp;ofi_rxm / loom tcp at most {worst:.2f}x "
                            f"({'within' if worst <= GOAL else 'outside'} the {GOAL}x goal)")
        t, worst = table(rows, coll, n, MEMORY, "loom-shm", "one host")
        lines += t
        if worst is not None:
            verdicts.append(f"- {coll} N = {n}: ofi shm / loom shm at most {worst:.2f}x")
    if verdicts:
        lines += ["## Worst ratio per table", ""] + verdicts + [""]
    print("\n".join(lines))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "loom-csv":
        loom_csv(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.stderr.write("usage: report.py loom-csv FILE LIBRARY | report DIR\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
