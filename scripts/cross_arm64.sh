#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds loom for arm64 (a DPU's Arm cores) and smoke-tests the result under qemu-user.
# Usage: scripts/cross_arm64.sh [BUILD_DIR] [TARGET...]
#   BUILD_DIR  default build-arm64; the target's libraries go to BUILD_DIR-sysroot
#   TARGET     ninja targets, default loom-dpu (the firmware; add runtime/libloom.so for the
#              library, which CI leaves out to keep its run short)
#
# Why a sysroot and not `apt-get install libdpdk-dev:arm64`: on Debian 12 the arm64 DPDK
# development package cannot be installed beside the amd64 one (some of its dependencies,
# libfdt-dev and the mlx drivers among them, are not multi-arch), and apt resolves that by
# removing the host's DPDK. So the arm64 packages are downloaded (apt-get download, no
# install) and unpacked into a directory of their own, and the compiler, the linker and
# pkg-config are pointed at it. The host's packages are never touched beyond the toolchain
# (crossbuild-essential-arm64) and qemu-user, which are plain amd64 packages.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build-arm64}
shift || true
sysroot=$(realpath -m "$build_dir-sysroot")

scripts/install_packages.sh crossbuild-essential-arm64 qemu-user meson ninja-build pkg-config patchelf

# arm64 package lists (idempotent: the architecture is added once, the lists fetched once).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo dpkg --add-architecture arm64
    $sudo apt-get update -qq
fi
if ! apt-cache show libdpdk-dev:arm64 >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
fi

# The sysroot: libdpdk-dev:arm64 and everything it depends on, plus the header-only
# libraries every build needs (architecture-independent packages). Unpacked once; a stamp
# names the package set, so a changed set starts it again.
packages=(libdpdk-dev:arm64 libstdc++6:arm64 nlohmann-json3-dev libcli11-dev)
stamp="$sysroot/.loom-sysroot"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${packages[*]}" ]; then
    echo "cross_arm64: unpacking the arm64 sysroot into $sysroot" >&2
    rm -rf "$sysroot" "$sysroot.debs"
    mkdir -p "$sysroot" "$sysroot.debs"
    # The closure over Depends (not Recommends or Suggests); arm64 packages only, since the
    # architecture-independent ones it reaches are tools (dpkg, debconf) a sysroot needs not.
    mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests \
        --no-conflicts --no-breaks --no-replaces --no-enhances "${packages[@]}" |
        grep -E '^[a-z0-9].*:arm64$' | sort -u)
    (cd "$sysroot.debs" && apt-get download -q "${closure[@]}" nlohmann-json3-dev libcli11-dev \
        >/dev/null 2>&1) || { echo "cross_arm64: apt-get download failed" >&2; exit 1; }
    for deb in "$sysroot.debs"/*.deb; do
        dpkg-deb -x "$deb" "$sysroot"
    done
    rm -rf "$sysroot.debs"
    # Some -dev packages install linker scripts (libbsd.so: GROUP ( /usr/lib/... )) whose
    # absolute paths name the target's own system; here they must name the sysroot's copies.
    grep -lsZ -e 'GROUP *(' -e 'INPUT *(' "$sysroot"/usr/lib/aarch64-linux-gnu/*.so |
        xargs -0 -r sed -i -e "s|\([( ]\)/usr/lib/|\1$sysroot/usr/lib/|g" -e "s|\([( ]\)/lib/|\1$sysroot/lib/|g"
    echo "${packages[*]}" >"$stamp"
fi

# The sysroot's half of the cross file (the path is this checkout's, so it is written here;
# packaging/cross/arm64-linux-gnu.ini holds the rest).
sysroot_ini="$sysroot/cross.ini"
libdirs="$sysroot/usr/lib/aarch64-linux-gnu:$sysroot/lib/aarch64-linux-gnu"
cat >"$sysroot_ini" <<EOF
[constants]
sysroot = '$sysroot'
[properties]
sys_root = sysroot
pkg_config_libdir = [sysroot + '/usr/lib/aarch64-linux-gnu/pkgconfig', sysroot + '/usr/share/pkgconfig']
[built-in options]
c_args = ['-idirafter', sysroot + '/usr/include']
cpp_args = ['-idirafter', sysroot + '/usr/include']
c_link_args = ['-L' + sysroot + '/usr/lib/aarch64-linux-gnu', '-Wl,-rpath-link,$libdirs']
cpp_link_args = ['-L' + sysroot + '/usr/lib/aarch64-linux-gnu', '-Wl,-rpath-link,$libdirs']
EOF

if [ ! -f "$build_dir/build.ninja" ]; then
    # Tests stay on the build machine (the native builds run them); ofi and verbs have no
    # arm64 libraries in the sysroot, and a DPU image carries loom-dpu, not those drivers.
    meson setup "$build_dir" --cross-file packaging/cross/arm64-linux-gnu.ini \
        --cross-file "$sysroot_ini" --werror -Dtests=false -Dofi=disabled -Dverbs=disabled \
        -Dcuda=disabled -Ddpdk=enabled >/dev/null
fi
if [ $# -eq 0 ]; then
    set -- tools/loom-dpu/loom-dpu
fi
if ! log=$(ninja -C "$build_dir" "$@" 2>&1); then
    printf '%s\n' "$log" | grep -v '^\[' | tail -n 60 >&2
    echo "cross_arm64: build failed in $build_dir" >&2
    exit 1
fi

# What was built is arm64 code, and it runs: under qemu-user, with the sysroot's loader and
# libraries (-L), the cross toolchain's libstdc++ found through the sysroot's copy.
for target in "$@"; do
    readelf -h "$build_dir/$target" | grep -q 'Machine: *AArch64' ||
        { echo "cross_arm64: $target is not an arm64 binary" >&2; exit 1; }
done
echo "cross_arm64: built ${*} for arm64 in $build_dir"

# Smoke test: two arm64 loom-dpu processes, the two nodes of a torus:2, under qemu-user with
# memif ports and no hugepages. Each must start DPDK's EAL, open its ports (node 1's client
# port connects to node 0's server: a memif hand-shake between two arm64 processes), write
# its ready file, run its poll loop, and stop cleanly on SIGTERM, printing its statistics.
# qemu's -L makes the sysroot's loader, DPDK and its PMD plugins the ones the binary finds.
# (Not checked here: frames through the link; the native tests do that.)
dpu="$build_dir/tools/loom-dpu/loom-dpu"
[ -x "$dpu" ] || exit 0
smoke=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$smoke"
}
trap cleanup EXIT
chmod 700 "$smoke"
head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$smoke/secret"
for node in 0 1; do
    qemu-aarch64 -L "$sysroot" "$dpu" --node "$node" --fabric torus:2 --dir "$smoke" \
        --secret-file "$smoke/secret" >"$smoke/out.$node" 2>"$smoke/err.$node" &
    pids+=($!)
done
for _ in $(seq 240); do
    [ -f "$smoke/node-0.ready" ] && [ -f "$smoke/node-1.ready" ] && break
    sleep 0.5
done
ready=1
[ -f "$smoke/node-0.ready" ] && [ -f "$smoke/node-1.ready" ] || ready=0
sleep 1
for node in 0 1; do
    kill -TERM "${pids[$node]}" 2>/dev/null || true
done
status=0
for node in 0 1; do
    wait "${pids[$node]}" || status=1
done
pids=()
for node in 0 1; do
    if [ $ready -ne 1 ] || [ $status -ne 0 ] ||
        ! grep -Eq "^dpu-link node=$node port=[0-9]+ to_node=$((1 - node)) " "$smoke/out.$node"; then
        echo "cross_arm64: smoke test failed: loom-dpu node $node under qemu-aarch64" \
            "(ready: $ready, exit: $status):" >&2
        tail -n 20 "$smoke/err.$node" "$smoke/out.$node" >&2
        exit 1
    fi
done
echo "cross_arm64: smoke test passed: two arm64 loom-dpu (torus:2) connected over memif and stopped cleanly under qemu-user"
