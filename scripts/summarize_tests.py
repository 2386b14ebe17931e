#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts the individual test cases of one or more Meson test logs.

Each Meson test is a CMocka (TAP) binary with many cases; Meson's own summary counts
binaries. This prints one line per build and, last, the plain closing line
'N passed, N failed, N skipped' over every case of every build. Exits 1 if anything failed.
"""
import json
import re
import sys

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")


def count(log_path):
    passed = failed = skipped = 0
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
            # A binary that failed (crashed, timed out, sanitizer report) counts as a
            # failure even when every case it printed passed.
            if entry.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL"):
                failed += 1
    return passed, failed, skipped


def main():
    total = [0, 0, 0]
    status = 0
    for path in sys.argv[1:]:
        p, f, s = count(path)
        print(f"{path}: {p} passed, {f} failed, {s} skipped")
        total = [total[0] + p, total[1] + f, total[2] + s]
        status |= 1 if f else 0
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return status


if __name__ == "__main__":
    sys.exit(main())
