#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source, build and script file of the tree names its license in an SPDX line within
its first three lines (after a #! line), the license of meson.build and LICENSE.

Usage: check_spdx.py [REPO_ROOT]   (default: the parent of this script's folder)
Exit 0 when every file carries it; 1 naming each file that does not."""
import pathlib
import subprocess
import sys

TAG = "SPDX-License-Identifier: Apache-2.0"
SOURCES = (".cc", ".hh", ".h", ".c", ".sh", ".py", ".cmake", ".cmake.in")
NAMED = ("meson.build", "meson_options.txt", "CMakeLists.txt", "run")


def tracked(root):
    out = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True)
    if out.returncode == 0:
        return [root / f for f in out.stdout.split()]
    return [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]


def needs_tag(path):
    return path.name.endswith(SOURCES) or path.name in NAMED


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    missing = []
    for path in tracked(root.resolve()):
        if not needs_tag(path):
            continue
        head = path.read_text(errors="replace").split("\n", 3)[:3]
        if not any(TAG in line for line in head):
            missing.append(path.relative_to(root.resolve()))
    for path in missing:
        print(f"{path}: no '{TAG}' line at the top", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
