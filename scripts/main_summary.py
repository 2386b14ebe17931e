#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The closing summary of scripts/main.sh: what the run showed, in a few lines.

Reads the main job's outputs in DIR (default results/main): the measured CSV of loom-bench
(columns by name: algo, bytes, a time column, the tuner's choice) and the predicted
comparisons of loom-sim ("winner at SIZE: ..." lines). Prints, per measured size, the
fastest algorithm, the tuner's choice and in-network (inc) against the best software
algorithm; then the predicted winners at scale; then where the full output is.
A missing or unreadable input is reported in the summary, never an error: the run itself
has already succeeded when this prints."""
import csv
import os
import sys

TIME_COLUMNS = ('time_us', 'p50_us', 'mean_us', 'avg_us')


def size_text(n):
    for unit, scale in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if n >= scale and n % scale == 0:
            return f'{n // scale} {unit}'
    return f'{n} B'


def measured(path):
    try:
        with open(path, newline='') as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        return [f'measured: no table ({e.strerror}: {path})']
    if not rows:
        return [f'measured: {path} has no rows']
    time_col = next((c for c in TIME_COLUMNS if c in rows[0]), None)
    if time_col is None or 'algo' not in rows[0] or 'bytes' not in rows[0]:
        return [f'measured: {path} lacks the algo, bytes or time columns']
    by_size = {}
    for r in rows:
        try:
            by_size.setdefault(int(r['bytes']), []).append((float(r[time_col]), r))
        except ValueError:
            continue
    lines = [f'measured ({time_col[:-3]} µs, 8 ranks, torus:2x2x2 over shm + loom-switch):']
    wins = {}
    for size in sorted(by_size):
        points = sorted(by_size[size], key=lambda p: p[0])
        best_t, best = points[0]
        wins[best['algo']] = wins.get(best['algo'], 0) + 1
        chosen = [r['algo'] for _, r in points
                  if r.get('tuner_choice', '').strip().lower() in ('1', 'true', 'yes', '<')]
        inc = [t for t, r in points if r['algo'] == 'inc']
        software = [(t, r['algo']) for t, r in points if r['algo'] != 'inc']
        text = f'  {size_text(size):>8}: fastest {best["algo"]} {best_t:.1f}'
        if chosen:
            text += f'; tuner chose {chosen[0]}'
        if inc and software:
            text += f'; inc / best software ({software[0][1]}) = {inc[0] / software[0][0]:.2f}'
        lines.append(text)
    lines.append('  fastest most often: ' +
                 ', '.join(f'{a} ({n})' for a, n in sorted(wins.items(), key=lambda w: -w[1])))
    return lines


def predicted(path, label):
    try:
        with open(path) as f:
            winners = [l.strip() for l in f if l.startswith('winner at')]
    except OSError as e:
        return [f'predicted {label}: no output ({e.strerror})']
    return [f'predicted {label} (simulated):'] + ['  ' + w for w in winners]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else 'results/main'
    lines = measured(os.path.join(out, 'allreduce-torus2x2x2.csv'))
    lines += predicted(os.path.join(out, 'predicted-512.txt'), '512 ranks, torus:8x8x8')
    lines += predicted(os.path.join(out, 'predicted-4096.txt'), '4096 ranks, torus:16x16x16')
    lines.append(f'full output: {out}/ (measured.txt, the CSV, predicted-*.txt, explain-4096.txt, plots)')
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
