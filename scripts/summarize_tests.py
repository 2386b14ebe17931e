#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts the individual test cases of one or more Meson test logs.

Each Meson test is a CMocka (TAP) binary with many cases; Meson's own summary counts
binaries. This prints one line per build and, last, the plain closing line
'N passed, N failed, N skipped' over every case of every build; each failed case and
binary is named under its build's line. Exits 1 if anything failed.
"""
import json
import re
import sys

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")


def count(log_path):
    """Returns (passed, failed, skipped, names of what failed) for one Meson test log."""
    passed = failed = skipped = 0
    failures = []
    with open(log_path) as f:
        for line in f:
            entry = json.loads(line)
            cases = 0
            for out_line in (entry.get("stdout") or "").splitlines():
                m = TAP_LINE.match(out_line.strip())
                if not m:
                    continue
                cases += 1
                if "# SKIP" in m.group(2) or "# skip" in m.group(2):
                    skipped += 1
                elif m.group(1) == "ok":
                    passed += 1
                else:
                    failed += 1
                    failures.append(f"{entry.get('name')}: not ok{m.group(2)}")
            # A binary that failed (crashed, timed out, sanitizer report) counts as a
            # failure even when every case it printed passed.
            if entry.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL"):
                failed += 1
                failures.append(f"{entry.get('name')}: {entry.get('result')} "
                                f"after {entry.get('duration', 0):.1f} s")
    return passed, failed, skipped, failures


def main():
    total = [0, 0, 0]
    status = 0
    for path in sys.argv[1:]:
        p, f, s, failures = count(path)
        print(f"{path}: {p} passed, {f} failed, {s} skipped")
        # The names go last in the run's output, where a truncated log still shows them.
        for name in failures:
            print(f"  failed: {name}")
        total = [total[0] + p, total[1] + f, total[2] + s]
        status |= 1 if f else 0
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return status


if __name__ == "__main__":
    sys.exit(main())
