#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Multi-node transports side by side, on one machine whose ranks each live in their own
# network namespace (their own host as far as the network goes):
#   network: loom's tcp driver, the ofi driver over libfabric's tcp;ofi_rxm, and Open MPI over
#            its tcp BTL, all across namespaces (loomrun --hosts netns; Open MPI by an MPMD
#            mpirun with `ip netns exec` per rank);
#   memory:  loom's shm driver and the ofi driver over libfabric's shm provider, one host.
# all-reduce and all-to-all, N = 2 and 4, 8 B to 64 MiB, every library timed the same way
# (per iteration a barrier, then one call from the last rank in to the last rank out; p50).
# Usage: bench/multinode/run.sh [--quick] [--out DIR] [--build DIR] [--ranks "2 4"]
#                               [--max SIZE] [--iters N]
# Writes raw.csv and summary.md (tables, ratios against loom tcp / loom shm) into DIR
# (default results/multinode/<date>/). Needs root (namespaces); see bench/multinode/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

quick=0 out="" build=build ranks="2 4" max=64M iters=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --out) out=$2; shift ;;
        --build) build=$2; shift ;;
        --ranks) ranks=${2//,/ }; shift ;;
        --max) max=$2; shift ;;
        --iters) iters=$2; shift ;;
        -h | --help) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || { echo "run.sh: network namespaces need root" >&2; exit 2; }
if [ "$quick" -eq 1 ]; then
    factor=8 max=1M iters=${iters:-10}
else
    factor=2 iters=${iters:-10}
fi
collectives="allreduce alltoall"
out=${out:-results/multinode/$(date +%Y-%m-%d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
log() { echo "[multinode $(date +%H:%M:%S)] $*" >&2; }

loomrun=$build/tools/loomrun/loomrun
bench=$build/tools/loom-bench/loom-bench
[ -x "$loomrun" ] && [ -x "$bench" ] || { echo "run.sh: build $build first (scripts/setup.sh $build)" >&2; exit 2; }
have_ofi=0
"$loomrun" --version 2>/dev/null | grep -q "ofi: enabled" && have_ofi=1

# The Open MPI harness of bench/peers (the same timing as loom-bench --timing barrier).
scripts/install_packages.sh libopenmpi-dev openmpi-bin iproute2
mpicc.openmpi -O2 -Wall -Wextra -Werror -o "$tmp/peers_openmpi" bench/peers/peers_mpi.c

# The benchmark's own namespaces for Open MPI (loomrun makes its own for loom): one per
# rank on a bridge, 10.78.0.(r+1); the bridge's 10.78.0.254 lets the ranks reach mpirun's
# PMIx server in this namespace, which Open MPI otherwise serves on loopback only.
bridge=lmbm$$
ns_names=()
teardown() {
    for ns in "${ns_names[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    ip link del "$bridge" 2>/dev/null || true
    rm -rf "$tmp"
}
trap teardown EXIT
make_namespaces() {  # N
    ip link add "$bridge" type bridge
    ip addr add 10.78.0.254/24 dev "$bridge"
    ip link set "$bridge" up
    for ((r = 0; r < $1; r++)); do
        local ns=lmm$$-$r veth=lmm$$h$r
        ip netns add "$ns"
        ns_names+=("$ns")
        ip link add "$veth" type veth peer name eth0 netns "$ns"
        ip link set "$veth" master "$bridge" up
        ip -n "$ns" addr add "10.78.0.$((r + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done
}
max_n=0
for n in $ranks; do [ "$n" -gt "$max_n" ] && max_n=$n; done
make_namespaces "$max_n"

to_bytes() {
    local s=${1^^}
    case "$s" in
        *K) echo $((${s%K} << 10)) ;; *M) echo $((${s%M} << 20)) ;; *) echo "$s" ;;
    esac
}
max_bytes=$(to_bytes "$max")
raw=$out/raw.csv
echo "library,collective,nranks,bytes,p50_us,p99_us" >"$raw"
errors=$out/errors.log
: >"$errors"

run_loom() {  # LIBRARY COLL N -- loomrun arguments... ; environment from the caller
    local lib=$1 coll=$2 n=$3
    shift 4
    rm -f "$tmp/loom.csv"
    if ! timeout 900 "$loomrun" -n "$n" "$@" -- "$bench" "$coll" -b 8 -e "$max" -f "$factor" \
        -n "$iters" -w 2 --timing barrier --outofplace -c 0 --quiet --csv "$tmp/loom.csv" \
        >"$tmp/out" 2>&1; then
        { echo "== $lib $coll N=$n failed"; tail -5 "$tmp/out"; } >>"$errors"
        log "$lib $coll N=$n failed (errors.log)"
    fi
    [ -s "$tmp/loom.csv" ] && python3 "$here/report.py" loom-csv "$tmp/loom.csv" "$lib" >>"$raw"
    return 0
}

run_openmpi() {  # COLL N: one rank per namespace, tcp BTL on the namespaces' network
    local coll=$1 n=$2 specs=() b app=()
    for ((b = 8; b <= max_bytes; b *= factor)); do
        local bytes=$b
        # all-to-all: at least one float per rank, a whole number of them (as loom-bench).
        [ "$coll" = alltoall ] && bytes=$(((b / (4 * n)) * 4 * n)) && [ "$bytes" -lt $((4 * n)) ] && bytes=$((4 * n))
        specs+=("$bytes:$iters:2")
    done
    for ((r = 0; r < n; r++)); do
        [ "$r" -gt 0 ] && app+=(":")
        app+=(-np 1 ip netns exec "lmm$$-$r" "$tmp/peers_openmpi" openmpi-tcp "$coll" "${specs[@]}")
    done
    if ! PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=10.78.0.0/24 \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 900 mpirun.openmpi --oversubscribe --bind-to none --mca btl self,tcp \
        --mca btl_tcp_if_include 10.78.0.0/24 -x PMIX_MCA_ptl_tcp_remote_connections \
        -x PMIX_MCA_ptl_tcp_if_include "${app[@]}" >"$tmp/out" 2>"$tmp/err"; then
        { echo "== openmpi-tcp $coll N=$n failed"; tail -5 "$tmp/err"; } >>"$errors"
        log "openmpi-tcp $coll N=$n failed (errors.log)"
    fi
    awk -F, 'NF == 7 && $1 == "openmpi-tcp" { print $1 "," $2 "," $3 "," $4 "," $5 "," $6 }' \
        "$tmp/out" >>"$raw"
}

export LOOM_CALIBRATE=off LOOM_CALIBRATION_FILE=$tmp/no-calibration.txt
unset LOOM_TRANSPORT LOOM_OFI_PROVIDER
start=$(date +%s)
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel $(uname -r)"
    echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "cores $(nproc)"
    echo "loadavg_at_start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "loom_commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "libfabric $(fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p' | head -1)"
    echo "openmpi $(mpirun.openmpi --version 2>/dev/null | head -1)"
    echo "ofi_driver $([ "$have_ofi" -eq 1 ] && echo built || echo 'not built (its columns stay empty)')"
    echo "iterations $iters per size (2 warm-up), sizes 8 B to $max by x$factor"
} >"$out/machine.txt"
for n in $ranks; do
    for coll in $collectives; do
        log "N=$n $coll: loom tcp, ofi tcp;ofi_rxm, Open MPI tcp (namespaces)"
        run_loom loom-tcp "$coll" "$n" -- --hosts netns --transport tcp
        [ "$have_ofi" -eq 1 ] && LOOM_OFI_PROVIDER='tcp;ofi_rxm' \
            run_loom ofi-tcp "$coll" "$n" -- --hosts netns --transport ofi
        run_openmpi "$coll" "$n"
        log "N=$n $coll: loom shm, ofi shm (one host)"
        run_loom loom-shm "$coll" "$n" -- --transport shm
        [ "$have_ofi" -eq 1 ] && LOOM_OFI_PROVIDER=shm \
            run_loom ofi-shm "$coll" "$n" -- --transport ofi
    done
done
echo "loadavg_at_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
echo "benchmark_seconds $(($(date +%s) - start))" >>"$out/machine.txt"
python3 "$here/report.py" report "$out" >"$out/summary.md"
cat "$out/summary.md"
[ -s "$errors" ] && log "some runs failed: $errors"
exit 0
