#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package a user installs on a DPU's Arm OS (or any host): loom-dpu, its
# systemd unit and its default configuration. Usage:
#   packaging/dpu/build_deb.sh BUILD_DIR [OUT_DIR]
# BUILD_DIR is a configured and built loom build (scripts/cross_arm64.sh for arm64, or the
# native build); the package's architecture is the build's host machine's. The .deb goes to
# OUT_DIR (default BUILD_DIR/packages). Install it with `apt install ./loom-dpu_*.deb`, which
# also brings the DPDK runtime libraries it names in Depends. Needs patchelf and, for arm64,
# the cross binutils (scripts/cross_arm64.sh installs both).
#
# The dependencies are read from the binary's own NEEDED entries (objdump), each DPDK library
# librte_X.so.23 mapped to Debian's package librte-X23, so the package asks for exactly what
# the binary loads. The PMDs are plugins DPDK loads at run time, not NEEDED entries: the ones
# loom-dpu uses (memif, af_packet, the ring mempool) are named by hand, and the BlueField's
# own (mlx5) is recommended.
set -euo pipefail
cd "$(dirname "$0")/../.."

build_dir=${1:?usage: packaging/dpu/build_deb.sh BUILD_DIR [OUT_DIR]}
out_dir=${2:-$build_dir/packages}
binary="$build_dir/tools/loom-dpu/loom-dpu"
unit="$build_dir/packaging/systemd/loom-dpu.service"
[ -x "$binary" ] || { echo "build_deb: $binary is not built" >&2; exit 1; }
[ -f "$unit" ] || { echo "build_deb: $unit is not configured" >&2; exit 1; }

version=$(meson introspect "$build_dir" --projectinfo |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
case "$(readelf -h "$binary" | sed -n 's/^ *Machine: *//p')" in
    AArch64) arch=arm64 tools=aarch64-linux-gnu- ;;
    "Advanced Micro Devices X86-64") arch=amd64 tools= ;;
    *) echo "build_deb: $binary is for a machine this script does not package" >&2; exit 1 ;;
esac

# The Debian package of each NEEDED library.
depends=()
while read -r lib; do
    case "$lib" in
        librte_*.so.*)
            name=${lib#librte_}
            abi=${name##*.so.}
            name=${name%%.so.*}
            name=${name//_/-}
            # Debian separates the ABI with a hyphen when the name ends in a digit (mlx5-23).
            [[ "$name" =~ [0-9]$ ]] && depends+=("librte-$name-$abi") || depends+=("librte-$name$abi")
            ;;
        libstdc++.so.6) depends+=("libstdc++6") ;;
        libgcc_s.so.1) depends+=("libgcc-s1") ;;
        libc.so.6 | libm.so.6 | ld-linux*) depends+=("libc6") ;;
        libbsd.so.0) depends+=("libbsd0") ;;
        libnuma.so.1) depends+=("libnuma1") ;;
        *) echo "build_deb: no package known for $lib (add it here)" >&2; exit 1 ;;
    esac
done < <("${tools}objdump" -p "$binary" | awk '/NEEDED/ {print $2}')
depends+=(librte-net-memif23 librte-net-af-packet23 librte-mempool-ring23)
depends_line=$(printf '%s\n' "${depends[@]}" | sort -u | paste -sd, - | sed 's/,/, /g')

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$binary" "$stage/usr/bin/loom-dpu"
# As meson install would: no debug symbols, no run path into the build tree.
"${tools}strip" --strip-unneeded "$stage/usr/bin/loom-dpu"
patchelf --remove-rpath "$stage/usr/bin/loom-dpu"
# The unit starts the packaged binary, whatever prefix the build was configured with.
install -d "$stage/lib/systemd/system"
sed "s|^ExecStart=[^ ]*/loom-dpu |ExecStart=/usr/bin/loom-dpu |" "$unit" \
    >"$stage/lib/systemd/system/loom-dpu.service"
grep -q '^ExecStart=/usr/bin/loom-dpu ' "$stage/lib/systemd/system/loom-dpu.service" ||
    { echo "build_deb: $unit has no ExecStart for loom-dpu" >&2; exit 1; }
install -D -m 0644 packaging/dpu/loom-dpu.env "$stage/etc/loom/loom-dpu.env"
install -D -m 0644 LICENSE "$stage/usr/share/doc/loom-dpu/copyright"
mkdir -p "$stage/DEBIAN"
echo /etc/loom/loom-dpu.env >"$stage/DEBIAN/conffiles"
cat >"$stage/DEBIAN/control" <<CONTROL
Package: loom-dpu
Version: $version
Architecture: $arch
Maintainer: loom developers
Section: net
Priority: optional
Depends: $depends_line
Recommends: librte-net-mlx5-23
Installed-Size: $(du -sk "$stage" | cut -f1)
Description: loom's DPU data plane (DPDK poll loop)
 Forwards torus traffic between DPUs by dimension-ordered routing with dateline
 virtual channels, and delivers it to the node's ranks. Configure
 /etc/loom/loom-dpu.env, then: systemctl enable --now loom-dpu.
CONTROL
# The unit is enabled by the administrator once the configuration names the node's ports.
mkdir -p "$out_dir"
deb="$out_dir/loom-dpu_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
