#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `meson install` gives a package that works from any prefix. Installs into a scratch prefix,
# then, each step a line "install check: ..." (the first failure stops it):
#  - pkg-config finds loom.pc with no other .pc file on its path (it requires none);
#  - the example (tests/install/example.c) built through `pkg-config --cflags --libs loom`
#    against libloom.so, and statically through `pkg-config --static` (fully static where
#    no back end needs shared libraries); both run;
#  - libloom.so exports the C API alone (loom_* at LOOM_0.1);
#  - the same example built with CMake through find_package(loom), loom::loom and
#    loom::loom_static; both run (skipped, and said, without cmake);
#  - every installed tool starts (--version) with an empty environment (no LD_LIBRARY_PATH);
#  - the daemons' systemd units are installed, start the installed binaries and pass
#    systemd-analyze verify (where systemd is installed).
# Usage: tests/install/check_install.sh BUILD_DIR
set -euo pipefail
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build_dir" --destdir "$dest" --quiet >/dev/null
option() {
    meson introspect "$build_dir" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]==sys.argv[1]))' "$1"
}
prefix=$(option prefix)
libdir=$(option libdir)
root="$dest$prefix"
case "$libdir" in
/*) lib="$dest$libdir" ;;
*) lib="$root/$libdir" ;;
esac

# Only loom.pc on the search path: a Requires of a build dependency would fail here. The .pc
# file names the configured prefix; point pkg-config at the scratch copy.
pc() { PKG_CONFIG_LIBDIR="$lib/pkgconfig" pkg-config --define-variable=prefix="$root" "$@" loom; }
pc --exists --print-errors
echo "install check: pkg-config: $(pc --cflags --libs)"

cc -std=c11 -Wall -Wextra -Werror "$here/example.c" -o "$dest/example" $(pc --cflags --libs)
LD_LIBRARY_PATH="$lib" "$dest/example" >/dev/null
echo "install check: example linked with libloom.so runs"
# A static link: libloom.a and what pkg-config --static adds must be all it needs. Fully
# static where no back end needs shared libraries; libfabric, libibverbs and DPDK load their
# providers and poll-mode drivers as shared objects (and Debian's static libfabric names PSM
# libraries it does not ship), so with the ofi, verbs or dpdk driver built libloom.a is
# linked statically and they stay shared. glibc warns that getaddrinfo in a static program
# loads NSS modules: expected.
static_libs=$(pc --static --libs)
if grep -qE -- '-l(fabric|ibverbs|rte_eal)( |$)' <<<"$static_libs"; then
    others=$(sed -E 's/(^| )-lloom( |$)/ /' <<<"$static_libs")
    cc "$here/example.c" -o "$dest/example_static" $(pc --cflags) -Wl,-Bstatic -lloom \
        -Wl,-Bdynamic $others 2>"$dest/ld.err" || { cat "$dest/ld.err" >&2; exit 1; }
    how="libloom.a (pkg-config --static; libfabric, libibverbs and DPDK shared)"
else
    cc -static "$here/example.c" -o "$dest/example_static" $(pc --static --cflags --libs) \
        2>"$dest/ld.err" || { cat "$dest/ld.err" >&2; exit 1; }
    how="fully static (pkg-config --static)"
fi
env -i "$dest/example_static" >/dev/null
echo "install check: example linked $how runs"

exported=$(nm -D --defined-only "$lib/libloom.so" | awk '$3 != "LOOM_0.1" {print $3}')
others=$(grep -v '^loom_.*@@LOOM_0\.1$' <<<"$exported" || true)
if [ -n "$others" ]; then
    echo "install check: libloom.so exports more than the C API: $(head -n 5 <<<"$others" | tr '\n' ' ')" >&2
    exit 1
fi
echo "install check: libloom.so exports $(wc -l <<<"$exported") symbols, all loom_* at LOOM_0.1"

if command -v cmake >/dev/null; then
    cmake -S "$here" -B "$dest/cmake" -DCMAKE_PREFIX_PATH="$root" >"$dest/cmake.log" 2>&1 &&
        cmake --build "$dest/cmake" >>"$dest/cmake.log" 2>&1 ||
        { cat "$dest/cmake.log" >&2; exit 1; }
    # CMake records the imported library's directory as the build tree's rpath.
    env -i "$dest/cmake/example" >/dev/null
    env -i "$dest/cmake/example_static" >/dev/null
    echo "install check: example built with find_package(loom) (loom::loom, loom::loom_static) runs"
else
    echo "install check: cmake not installed: the CMake package is not checked"
fi

# A tool that cannot find a library it needs fails in the loader (exit 127, "error while
# loading shared libraries") before its own code runs.
for tool in loom-sim loom-bench loomrun loom-switch loom-ctld loomctl; do
    # loom-ctld and loomctl are built only where cpp-httplib is (tools/meson.build).
    case $tool in loom-ctld | loomctl) [ -e "$root/bin/$tool" ] || continue ;; esac
    rc=0
    out=$(env -i "$root/bin/$tool" --version 2>&1) || rc=$?
    if [ "$rc" -ne 0 ] && { [ "$rc" -ge 126 ] || grep -q "error while loading" <<<"$out"; }; then
        echo "install check: installed $tool does not start with an empty environment: $out" >&2
        exit 1
    fi
done
echo "install check: installed tools start from $prefix with an empty environment"

# The daemons' systemd units: installed where systemd looks for a package's units, each
# starting the installed binary. systemd-analyze verify (where systemd is installed) checks
# them offline, on copies whose ExecStart points into the scratch prefix.
units=$root/lib/systemd/system
for unit in loom-ctld loom-switch loom-dpu; do
    case $unit in loom-ctld | loom-dpu) [ -e "$root/bin/$unit" ] || continue ;; esac
    file=$units/$unit.service
    if [ ! -f "$file" ] || ! grep -q "^ExecStart=$prefix/bin/$unit " "$file"; then
        echo "install check: $file is missing or does not start $prefix/bin/$unit" >&2
        exit 1
    fi
    if command -v systemd-analyze >/dev/null; then
        sed "s|^ExecStart=$prefix/bin/|ExecStart=$root/bin/|" "$file" >"$dest/$unit.service"
        # A warning about the unit itself (an assignment it ignores) names its file.
        if ! out=$(systemd-analyze verify "$dest/$unit.service" 2>&1) ||
            grep -q "$unit.service" <<<"$out"; then
            echo "install check: systemd-analyze verify $unit.service: $out" >&2
            exit 1
        fi
    fi
done
if command -v systemd-analyze >/dev/null; then
    echo "install check: systemd units installed and verified (systemd-analyze verify)"
else
    echo "install check: systemd units installed (systemd-analyze not installed: not verified)"
fi
echo "install check: ok"
