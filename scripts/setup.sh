#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what loom needs to build and test on Debian (idempotent: packages already
# present are not touched, so a second run makes no network access) and configures the
# build directory. Usage: scripts/setup.sh [BUILD_DIR] [meson options...]
set -euo pipefail
cd "$(dirname "$0")/.."

# cmake: meson writes the CMake package's version file with it, and the install check
# builds the example through find_package(loom). libfabric and rdma-core: the ofi and verbs
# drivers (libfabric-bin brings fi_info, which the docs use to list providers).
# libcpp-httplib-dev: the HTTP API of the control plane (loom-ctld, loomctl). libdpdk-dev:
# the dpdk driver (drivers/dpdk; its ports run here on virtual devices, memif and af_packet).
packages=(g++ meson ninja-build pkg-config python3 libcmocka-dev nlohmann-json3-dev
          libcli11-dev clang-format gnuplot-nox openmpi-bin iproute2 cmake
          libfabric-dev libfabric-bin libibverbs-dev librdmacm-dev libcpp-httplib-dev
          libdpdk-dev)
scripts/install_packages.sh "${packages[@]}"

build_dir=${1:-build}
shift || true
# The project's builds treat warnings as errors (meson.build leaves that off for users);
# a directory configured without it (a plain `meson setup`) is switched over.
if [ ! -f "$build_dir/build.ninja" ]; then
    meson setup "$build_dir" --werror "$@" >/dev/null
elif ! meson introspect "$build_dir" --buildoptions |
        python3 -c 'import json,sys; sys.exit(not any(o["name"] == "werror" and o["value"] for o in json.load(sys.stdin)))'; then
    meson configure "$build_dir" -Dwerror=true >/dev/null
fi
# Quiet when it builds; a failed build shows what failed (ninja reports on stdout).
if ! log=$(ninja -C "$build_dir" 2>&1); then
    printf '%s\n' "$log" | grep -v '^\[' | tail -n 60 >&2
    echo "build failed in $build_dir" >&2
    exit 1
fi
