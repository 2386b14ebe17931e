#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The include-direction check (docs/architecture.md#layout): dependencies point one way.

    tools -> runtime/comm, tuner, engine / fabric / inc -> drivers -> runtime/kernels, base

Every quoted #include of the library's sources (runtime, drivers, inc, fabric, tools) is
resolved to a file and both ends are mapped to their component (a folder such as
runtime/engine, drivers/shm, inc/node). The include is allowed when the target component
is in the source component's list below; and a private header (a driver's own folder,
*_impl.hh, *_internal.hh) is included only from its own folder. Tests, fuzzers and
benchmarks may look inside anything and are not checked.

Prints one line per violation (file:line, the include, the rule it breaks) and exits 1 when
there is any; run by scripts/test.sh.
"""
import os
import re
import subprocess
import sys

# Quoted includes resolve against these roots, in the order the build's include paths give.
INCLUDE_ROOTS = ["", "runtime", "runtime/include", "fabric"]
CHECKED_TOPS = ("runtime", "drivers", "inc", "fabric", "tools")

DRIVER_FOLDERS = (
    "self", "shm", "tcp", "fault", "forward", "ofi", "verbs", "dpdk", "cuda", "reliable",
)
BASE = {"runtime/base"}
KERNELS = BASE | {"runtime/kernels"}
DRIVER_LAYER = KERNELS | {"drivers", "drivers/common"}
TOPOLOGY = BASE | {"fabric/topology"}
ROUTING = TOPOLOGY | {"fabric/routing"}
SCHEDULE = BASE | {"runtime/schedule"}
ALGORITHMS = SCHEDULE | ROUTING | {"runtime/algorithms"}
INC = DRIVER_LAYER | {"inc", "inc/protocol", "inc/aggregator", "inc/client", "inc/tree", "inc/node"}
RUNTIME = (
    INC
    | ALGORITHMS
    | {"runtime/include", "runtime/tuner", "runtime/engine", "runtime/bootstrap", "runtime/comm"}
    | {"fabric/sim", "fabric/control"}
)

# What each component may include besides itself. A component missing here is an error:
# a new folder states where it stands.
ALLOWED = {
    "runtime/include": set(),
    "runtime/base": {"runtime/include"},  # the public status codes
    "runtime/kernels": BASE | {"runtime/include"},
    # drivers/registry.cc, the one place that knows the drivers' names, opens each of them.
    "drivers": DRIVER_LAYER | {f"drivers/{d}" for d in DRIVER_FOLDERS},
    "drivers/common": BASE | {"drivers"},
    # Every driver: the driver interface, the shared matcher, base; forwarding also the
    # lattice's routing.
    **{
        f"drivers/{d}": DRIVER_LAYER | ROUTING
        for d in DRIVER_FOLDERS
    },
    # The DPDK driver carries its messages with drivers/reliable (its public reliable.hh).
    "drivers/dpdk": DRIVER_LAYER | ROUTING | {"drivers/reliable"},
    "fabric/topology": BASE,
    "fabric/routing": ROUTING,
    "fabric/sim": ALGORITHMS | {"runtime/tuner"},
    "fabric/control": ROUTING | BASE,
    "runtime/schedule": SCHEDULE | TOPOLOGY,
    "runtime/algorithms": ALGORITHMS,
    "runtime/tuner": ALGORITHMS,
    "runtime/bootstrap": BASE,
    "runtime/engine": SCHEDULE | DRIVER_LAYER,
    **{c: INC for c in ("inc", "inc/protocol", "inc/aggregator", "inc/client", "inc/tree", "inc/node")},
    "runtime/comm": RUNTIME,
}
# tools/common: what the tools share (the size grammar, the gnuplot writer).
ALLOWED_TOOL = RUNTIME | {"runtime/include", "tools/common"}
# tools/loom-dpu, the DPU's router, is DPDK firmware built on the dpdk driver's ports and
# frames and reads the reliable protocol's wire header (it routes those frames): it may
# include those two drivers' headers, private ones included.
FIRMWARE_TOOLS = {"tools/loom-dpu": {"drivers/dpdk", "drivers/reliable"}}


def component(path):
    parts = path.split("/")
    if parts[0] == "runtime":
        return "runtime/" + parts[1] if len(parts) > 2 else "runtime"
    if parts[0] in ("drivers", "fabric", "inc", "tools"):
        return parts[0] + "/" + parts[1] if len(parts) > 2 else parts[0]
    return parts[0]


def private_home(path):
    """(folder, readers) for a private header: it may be included from files in the folder
    or below it, and from files directly in one of `readers`; None for an interface."""
    name = os.path.basename(path)
    folder = os.path.dirname(path)
    if name.endswith(("_impl.hh", "_internal.hh")):
        return folder, ()
    parts = path.split("/")
    # A driver's folder is its own. The registries in drivers/ open each driver through the
    # factory header it has (drivers/<d>/<d>.hh) and list its parameters (<d>_params.hh).
    if parts[0] == "drivers" and len(parts) > 2 and parts[1] != "common":
        interface = name in (parts[1] + ".hh", parts[1] + "_params.hh")
        # ... and so do the drivers whose rule names this one (dpdk carries its messages
        # with drivers/reliable through reliable.hh).
        users = tuple(c for c, allowed in ALLOWED.items() if folder in allowed)
        firmware = tuple(t for t, reads in FIRMWARE_TOOLS.items() if folder in reads)
        return folder, (("drivers",) + users if interface else ()) + firmware
    return None


def resolve(source, include, exists):
    for root in [os.path.dirname(source)] + INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(root, include))
        if exists(candidate):
            return candidate
    return None


def violations(sources, lines_of, exists):
    """The rule breaks among `sources` (paths), reading each with lines_of(path)."""
    include = re.compile(r'\s*#\s*include\s+"([^"]+)"')
    problems = []
    for source in sorted(set(sources)):
        if not source.startswith(CHECKED_TOPS) or not re.search(r"\.(cc|hh|h|c)$", source):
            continue
        src = component(source)
        for number, line in enumerate(lines_of(source), 1):
            m = include.match(line)
            if not m:
                continue
            target = resolve(source, m.group(1), exists)
            if target is None:
                if m.group(1) != "loom_config.h":  # generated into the build folder
                    problems.append(f"{source}:{number}: {m.group(1)}: not found")
                continue
            dst = component(target)
            where = f'{source}:{number}: "{m.group(1)}"'
            private = private_home(target)
            if private is not None:
                folder, readers = private
                here = os.path.dirname(source)
                if not (here == folder or here.startswith(folder + "/") or here in readers):
                    problems.append(f"{where}: private header of {folder}")
                    continue
            if dst == src:
                continue
            if src.startswith("tools/"):
                allowed = ALLOWED_TOOL | FIRMWARE_TOOLS.get(src, set())
            elif src in ALLOWED:
                allowed = ALLOWED[src]
            else:
                problems.append(f"{where}: component {src} has no rule in this script")
                continue
            if dst not in allowed:
                problems.append(f"{where}: {src} may not depend on {dst}")
    return problems


def self_test():
    """The checker catches each kind of break and passes a clean tree (run by meson)."""
    tree = {
        "runtime/base/status.hh": [],
        "runtime/engine/engine.hh": ['#include "base/status.hh"'],
        "runtime/engine/engine_impl.hh": [],
        "drivers/driver.hh": ['#include "base/status.hh"'],
        "drivers/self/self.hh": ['#include "drivers/driver.hh"'],
        "drivers/registry.cc": ['#include "drivers/self/self.hh"'],
        "runtime/algorithms/ring.cc": ['#include "base/status.hh"'],
        "tools/loomrun/main.cc": ['#include "engine/engine.hh"'],
    }
    clean = violations(tree, lambda p: tree[p], lambda p: p in tree)
    assert clean == [], clean
    breaks = {
        "drivers/shm/shm.hh": ['#include "drivers/self/self.hh"'],  # another driver's header
        "runtime/algorithms/bad.cc": ['#include "engine/engine.hh"'],  # upward
        "drivers/tcp/tcp.cc": ['#include "engine/engine.hh"'],  # upward
        "runtime/comm/comm.cc": ['#include "engine/engine_impl.hh"'],  # *_impl.hh
        "inc/odd/x.cc": ['#include "base/status.hh"'],  # a folder without a rule
    }
    tree.update(breaks)
    found = violations(tree, lambda p: tree[p], lambda p: p in tree)
    for path in breaks:
        assert any(line.startswith(path + ":") for line in found), (path, found)
    assert len(found) == len(breaks), found
    print("include check self-test: ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
    ).stdout.strip()
    os.chdir(root)
    listed = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    files = subprocess.run(listed, capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if os.path.isfile(f)]

    def lines_of(path):
        with open(path, errors="replace") as text:
            return text.read().splitlines()

    problems = violations(files, lines_of, os.path.isfile)
    for p in problems:
        print(p)
    print(f"include check: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
