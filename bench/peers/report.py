#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns run.sh's raw.csv into tables, plots and summary.md (see README.md).

  report.py loom-csv FILE LIBRARY REPEAT   loom-bench's --csv rows as raw.csv rows
  report.py report DIR                     DIR/raw.csv -> DIR/*.md, DIR/*.png
"""
import csv
import math
import os
import statistics
import subprocess
import sys

COLLECTIVES = ["allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"]
PEERS = ["openmpi", "mpich"]  # plus gloo-*, whose best per point is "gloo"
SUMMARY_SIZES = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def loom_csv(path, library, repeat):
    out = csv.writer(sys.stdout, lineterminator="\n")
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            # The peers' harnesses time out of place, per iteration (loom-bench --timing
            # barrier); an in-place row or one without a p50 is another measurement.
            if r.get("inplace") == "1" or not r["p50_us"]:
                continue
            algo = r.get("algo", "")
            out.writerow([library, r["collective"], r["nranks"], r["bytes"], r["p50_us"],
                          r["p99_us"], r["mean_us"], algo, repeat, "p50"])


def human(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def fmt(us):
    if us is None:
        return "–"
    return f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def load(out):
    """{(library, collective, n, bytes): (median p50 over repeats, loom algorithm)}"""
    runs = {}
    with open(os.path.join(out, "raw.csv"), newline="") as f:
        for r in csv.DictReader(f):
            key = (r["library"], r["collective"], int(r["nranks"]), int(r["bytes"]))
            runs.setdefault(key, ([], r["algo"]))[0].append(float(r["p50_us"]))
    return {k: (statistics.median(v), algo) for k, (v, algo) in runs.items()}


def machine(out):
    m = {}
    with open(os.path.join(out, "machine.txt")) as f:
        for line in f:
            name, _, rest = line.strip().partition(" ")
            m[name] = rest
    return m


def number(m, name):
    try:
        return float(m.get(name, "").split()[0])
    except (ValueError, IndexError):
        return None


def best_gloo(data, coll, n, b):
    cands = [(v[0], lib) for (lib, c, nn, bb), v in data.items()
             if lib.startswith("gloo-") and c == coll and nn == n and bb == b]
    return min(cands) if cands else (None, None)


def value(data, lib, coll, n, b):
    v = data.get((lib, coll, n, b))
    return v[0] if v else None


def points(data, coll):
    return sorted({(n, b) for (_, c, n, b) in data if c == coll})


def table(data, coll, note):
    pts = points(data, coll)
    glibs = sorted({lib for (lib, c, _, _) in data if c == coll and lib.startswith("gloo-")})
    extra = [lib for lib in ("loom-tcp", "openmpi-tcp")
             if any(k[0] == lib and k[1] == coll for k in data)]
    head = (["N", "size", "loom", "loom algorithm", "openmpi", "mpich", "gloo (best)",
             "gloo algorithm", "loom / best peer"] + extra + glibs)
    lines = [f"# {coll}: median time per call (µs)", "", note, "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, b in pts:
        loom = data.get(("loom", coll, n, b))
        g, glib = best_gloo(data, coll, n, b)
        peers = [x for x in [value(data, p, coll, n, b) for p in PEERS] + [g] if x is not None]
        ratio = f"{loom[0] / min(peers):.2f}" if loom and peers else "–"
        row = [str(n), human(b), fmt(loom[0] if loom else None), (loom[1] if loom else "") or "–",
               fmt(value(data, "openmpi", coll, n, b)), fmt(value(data, "mpich", coll, n, b)),
               fmt(g), glib[5:] if glib else "–", ratio]
        row += [fmt(value(data, lib, coll, n, b)) for lib in extra + glibs]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def tcp_table(data):
    libs = ["loom-tcp", "openmpi-tcp", "mpich", "gloo", "loom"]
    sizes = sorted({b for (lib, c, n, b) in data if lib == "loom-tcp" and c == "allreduce"
                    and n == 2})
    sizes = sizes or sorted({b for (lib, c, n, b) in data if lib == "openmpi-tcp"})
    lines = ["# allreduce over TCP, N = 2: median time per call (µs)", "",
             "loom-tcp: loomrun --transport tcp; openmpi-tcp: --mca btl self,tcp; mpich: as "
             "installed (its default channel, which may use shared memory); gloo: its TCP "
             "transport on loopback (best algorithm); loom: shm, for reference.", "",
             "| size | " + " | ".join(libs) + " |", "|" + "---|" * (len(libs) + 1)]
    for b in sizes:
        row = [human(b)]
        for lib in libs:
            row.append(fmt(best_gloo(data, "allreduce", 2, b)[0] if lib == "gloo"
                           else value(data, lib, "allreduce", 2, b)))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def plot(out, data, coll):
    ns = sorted({n for n, _ in points(data, coll)})
    if not ns:
        return
    libs = ["loom", "openmpi", "mpich", "gloo", "loom-tcp", "openmpi-tcp"]
    script = [f"set terminal pngcairo size {480 * len(ns)},420 font ',9'",
              f"set output '{os.path.join(out, coll + '.png')}'",
              f"set multiplot layout 1,{len(ns)} title '{coll}: median time per call'",
              "set logscale xy", "set xlabel 'bytes'", "set ylabel 'µs'", "set grid",
              "set xtics 1,16", "set format x '%.0b%B'", "set format y '%g'",
              "set key top left", "set datafile missing 'NaN'"]
    for n in ns:
        path = os.path.join(out, f"{coll}.N{n}.dat")
        sizes = sorted({b for nn, b in points(data, coll) if nn == n})
        cols = []
        for lib in libs:
            vals = [best_gloo(data, coll, n, b)[0] if lib == "gloo" else
                    value(data, lib, coll, n, b) for b in sizes]
            if any(v is not None for v in vals):
                cols.append((lib, vals))
        with open(path, "w") as f:
            f.write("# bytes " + " ".join(lib for lib, _ in cols) + "\n")
            for i, b in enumerate(sizes):
                f.write(f"{b} " + " ".join("NaN" if v[i] is None else f"{v[i]:.3f}"
                                          for _, v in cols) + "\n")
        script.append(f"set title 'N = {n}'")
        script.append("plot " + ", ".join(
            f"'{path}' using 1:{i + 2} with linespoints lw 2 lc {libs.index(lib) + 1} "
            f"dashtype {2 if lib.endswith('-tcp') else 1} title '{lib}'"
            for i, (lib, _) in enumerate(cols)))
    script.append("unset multiplot")
    done = subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=False,
                          capture_output=True)
    if done.returncode != 0:  # its warnings (one size: "empty x range") are not worth a line
        sys.stderr.write(f"report.py: gnuplot failed for {coll}:\n{done.stderr}")


def summary(out, data, m, note):
    memcpy = number(m, "memcpy_bandwidth")
    lat = number(m, "shm_one_way_latency")
    lines = ["# loom against its peers: allreduce, float32 sum, shared memory", "",
             note, "",
             "floor = max(shm one-way latency × ceil(log2 N), 2·(N−1)/N · M / memcpy bandwidth), "
             f"with the limits measured in this run: shm one-way latency {m.get('shm_one_way_latency', '?')}, "
             f"memcpy bandwidth {m.get('memcpy_bandwidth', '?')} (machine.txt). The first term is "
             "the fewest latency-bound steps, the second the bytes each rank must at least copy.",
             "", "| N | size | best peer | best peer µs | loom µs | loom algorithm | loom / best | "
             "floor µs | loom / floor |", "|---|---|---|---|---|---|---|---|---|"]
    for n, b in points(data, "allreduce"):
        if b not in SUMMARY_SIZES:
            continue
        cands = [(value(data, p, "allreduce", n, b), p) for p in PEERS]
        cands.append(best_gloo(data, "allreduce", n, b))
        cands = [c for c in cands if c[0] is not None]
        best, name = min(cands) if cands else (None, "–")
        loom = data.get(("loom", "allreduce", n, b))
        floor = None
        if memcpy and lat is not None:
            floor = max(lat * math.ceil(math.log2(n)), 2 * (n - 1) / n * b / (memcpy * 1e3))
        lt = loom[0] if loom else None
        lines.append("| " + " | ".join([
            str(n), human(b), name, fmt(best), fmt(lt), (loom[1] if loom else "") or "–",
            f"{lt / best:.2f}" if lt and best else "–", fmt(floor),
            f"{lt / floor:.1f}" if lt and floor else "–"]) + " |")
    lines += ["", "Machine (machine.txt):", "", "```"]
    lines += [f"{k} {v}" for k, v in m.items()]
    lines += ["```"]
    errors = os.path.join(out, "errors.log")
    if os.path.exists(errors) and os.path.getsize(errors) > 0:
        lines += ["", "Some launches failed; their points are missing (errors.log):", "", "```",
                  open(errors).read().strip()[:3000], "```"]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def report(out):
    data = load(out)
    with open(os.path.join(out, "raw.csv"), newline="") as f:
        loom_means = sum(1 for r in csv.DictReader(f) if r["timing"] == "mean-loop")
    m = machine(out)
    note = ("Each point: the median over iterations of (last rank leaving − last rank entering), "
            "each iteration after a barrier; the median over repeats when run.sh repeated. "
            "Sizes as nccl-tests (bytes of the per-rank buffer). "
            f"N ranks on {m.get('cores_online', '?')} online.")
    cuts = os.path.join(out, "cuts.log")
    if os.path.exists(cuts) and os.path.getsize(cuts) > 0:
        ncut = sum(1 for _ in open(cuts))
        note += (f" {ncut} peer points ran fewer iterations than asked, to fit run.sh's time "
                 "budget per point (cuts.log).")
    if m.get("loom_build", "ok") != "ok":
        note += f" The loom build of this run failed: {m['loom_build']}."
    if loom_means:
        note += (f" {loom_means} of loom's points come from loom-bench's table (it wrote no "
                 "--csv): the mean per call of a loop of back-to-back calls, not a median "
                 "over barrier-separated iterations (timing = mean-loop in raw.csv).")
    for coll in COLLECTIVES:
        if points(data, coll):
            with open(os.path.join(out, coll + ".md"), "w") as f:
                f.write(table(data, coll, note))
            plot(out, data, coll)
    if any(k[0] in ("loom-tcp", "openmpi-tcp") for k in data):
        with open(os.path.join(out, "allreduce_tcp.md"), "w") as f:
            f.write(tcp_table(data))
    summary(out, data, m, note)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "loom-csv":
        loom_csv(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
