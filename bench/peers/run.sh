#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Side-by-side benchmark of loom against Open MPI, MPICH and Gloo on this machine.
# Usage: bench/peers/run.sh [--quick] [--out DIR] [--sizes "8 1K 64K ..."] [--ranks "2 4"]
# Installs what it lacks (apt-get, only packages not yet installed), builds the harnesses
# and loom (build-peers/), measures the machine's limits, then runs every library in turn
# for each N and collective (interleaved, so machine noise hits all alike) and writes
# tables, plots, machine.txt and summary.md into DIR (default results/peers/<date>/).
# See bench/peers/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

quick=0
out=""
sizes=""
ranks=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --out) out=$2; shift ;;
        --sizes) sizes=${2//,/ }; shift ;;
        --ranks) ranks=${2//,/ }; shift ;;
        -h|--help) sed -n 2,8p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$quick" -eq 1 ]; then
    : "${sizes:=8 64K 1M}"
    : "${ranks:=2 4}"
else
    : "${sizes:=8 64 512 1K 4K 16K 64K 256K 1M 4M 16M 64M}"
    : "${ranks:=2 4 8}"
fi
collectives="allreduce allgather reduce_scatter alltoall broadcast"
out=${out:-results/peers/$(date +%Y-%m-%d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log() { echo "[peers $(date +%H:%M:%S)] $*" >&2; }

# --- install (idempotent: nothing is fetched when every package is present) ---
packages=(libopenmpi-dev openmpi-bin mpich libmpich-dev libgloo-dev gnuplot-nox g++ python3
          meson ninja-build pkg-config)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- build: loom (release, build-peers/), then the harnesses into build-peers/peers/ ---
if [ ! -f build-peers/build.ninja ]; then
    meson setup build-peers --buildtype=release >/dev/null
fi
loom_build=ok
if ! ninja ${PEERS_JOBS:+-j "$PEERS_JOBS"} -C build-peers tools/loomrun/loomrun \
    tools/loom-bench/loom-bench >"$out/loom-build.log" 2>&1; then
    [ -x build-peers/tools/loom-bench/loom-bench ] || { cat "$out/loom-build.log" >&2; exit 1; }
    loom_build="FAILED (see loom-build.log): measuring the loom binaries of an earlier build"
    log "loom build $loom_build"
fi
bin=build-peers/peers
mkdir -p "$bin"
flags=(-O2 -Wall -Wextra -Werror)
stale() { [ ! -x "$1" ] || [ "$2" -nt "$1" ] || [ "$here/timing.h" -nt "$1" ]; }
stale "$bin/limits" "$here/limits.c" && gcc "${flags[@]}" -o "$bin/limits" "$here/limits.c"
stale "$bin/peers_openmpi" "$here/peers_mpi.c" &&
    mpicc.openmpi "${flags[@]}" -o "$bin/peers_openmpi" "$here/peers_mpi.c"
stale "$bin/peers_mpich" "$here/peers_mpi.c" &&
    mpicc.mpich "${flags[@]}" -o "$bin/peers_mpich" "$here/peers_mpi.c"
if stale "$bin/peers_gloo" "$here/peers_gloo.cc"; then
    read -ra gloo_flags <<<"$(pkg-config --cflags --libs gloo 2>/dev/null || true)"
    if [ ${#gloo_flags[@]} -eq 0 ]; then  # Debian's libgloo-dev ships no .pc file: ask dpkg
        lib=$(dpkg -L libgloo-dev | grep -m1 '/libgloo\.so$')
        gloo_flags=("-L$(dirname "$lib")" "-Wl,-rpath,$(dirname "$lib")" -lgloo)
    fi
    g++ -std=c++17 "${flags[@]}" -o "$bin/peers_gloo" "$here/peers_gloo.cc" "${gloo_flags[@]}" \
        -pthread
fi

# --- the machine ---
log "measuring the machine's limits"
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel $(uname -sr)"
    echo "cpu_model $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
    echo "cores_online $(nproc) cores"
    echo "cores_all $(nproc --all) cores"
    echo "loadavg_at_start $(cut -d' ' -f1-3 /proc/loadavg)"
    for p in openmpi-bin mpich libgloo-dev; do
        echo "version_$p $(dpkg-query -W -f='${Version}' "$p")"
    done
    echo "loom_build $loom_build"
    echo "version_loom $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo '+dirty')"
    "$bin/limits"
} >"$out/machine.txt"
cat "$out/machine.txt" >&2

# --- sizes: bytes, iterations and warm-up calls per size ---
to_bytes() {
    case "$1" in
        *K) echo $(( ${1%K} << 10 )) ;;
        *M) echo $(( ${1%M} << 20 )) ;;
        *G) echo $(( ${1%G} << 30 )) ;;
        *) echo "$1" ;;
    esac
}
# The size each library runs for COLLECTIVE on N ranks: float32 elements, and for the
# collectives that cut the buffer in N pieces a multiple of 4·N bytes (at least one element
# per rank), so that every library moves exactly the same bytes.
actual_bytes() {
    local coll=$1 n=$2 b=$3 unit=4
    case "$coll" in allgather|reduce_scatter|alltoall) unit=$((4 * n)) ;; esac
    [ "$b" -lt "$unit" ] && b=$unit
    echo $(( b / unit * unit ))
}
iters_for() {  # quick: few; full: as many as 256 MiB of traffic, 5..200
    local b=$1 it
    if [ "$quick" -eq 1 ]; then
        [ "$b" -le 65536 ] && echo 20 || echo 8
        return
    fi
    it=$(( (256 << 20) / b ))
    [ "$it" -gt 200 ] && it=200
    [ "$it" -lt 5 ] && it=5
    echo "$it"
}
warmup_for() { local w=$(( $1 / 10 )); [ "$w" -lt 1 ] && w=1; [ "$w" -gt 20 ] && w=20; echo "$w"; }

limit=$([ "$quick" -eq 1 ] && echo 120 || echo 900)  # seconds per launch
# Seconds per size and library that the peers' harnesses fit their iterations into (from the
# warm-up calls' time, at least 5 iterations): MPICH busy-polls, so with more ranks than cores
# one call can take tens of ms. loom-bench has no such cut: it runs every iteration.
budget=${PEERS_BUDGET_S:-$([ "$quick" -eq 1 ] && echo 1 || echo 2)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$out/raw.csv
echo "library,collective,nranks,bytes,p50_us,p99_us,mean_us,algo,repeat,timing" >"$raw"
: >"$out/errors.log"
: >"$out/cuts.log"
as_root=()
[ "$(id -u)" -eq 0 ] && as_root=(--allow-run-as-root)
loom_csv=0
build-peers/tools/loom-bench/loom-bench --help 2>&1 | grep -q -- '--csv' && loom_csv=1
[ "$loom_csv" -eq 1 ] || log "loom-bench has no --csv yet: reading its table (mean per call)"

# Appends harness CSV (library,collective,nranks,bytes,p50,p99,mean) to raw.csv.
add_rows() { sed -En "/^[a-z][a-z0-9_-]*,[a-z_]+,[0-9]+,[0-9]+,/s/\$/,,$rep,p50/p" "$1" >>"$raw"; }

run_logged() {  # NAME CMD...: runs CMD under the launch limit; a failure is logged, not fatal
    local name=$1 rc=0
    shift
    timeout "$limit" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        { echo "== $name: exit $rc$([ "$rc" -eq 124 ] && echo " (timed out after $limit s)") (command: $*)"
          tail -5 "$tmp/err"; } >>"$out/errors.log"
        log "$name failed (see errors.log)"
    fi
}

run_loom() {  # LIBRARY TRANSPORT COLL N SPEC...: one loomrun per size (iterations vary)
    local lib=$1 transport=$2 coll=$3 n=$4 spec b it w
    shift 4
    for spec in "$@"; do
        IFS=: read -r b it w _ <<<"$spec"
        # The peers' timing (timing.h): a barrier and one call per iteration, out of place,
        # unchecked: loom-bench --timing barrier --outofplace -c 0.
        local args=("$coll" -b "$b" -e "$b" -f 2 -n "$it" -w "$w" --timing barrier --outofplace -c 0)
        [ "$loom_csv" -eq 1 ] && args+=(--csv "$tmp/loom.csv")
        rm -f "$tmp/loom.csv"
        run_logged "$lib $coll N=$n $b B" build-peers/tools/loomrun/loomrun -n "$n" \
            --transport "$transport" -- build-peers/tools/loom-bench/loom-bench "${args[@]}"
        if [ -s "$tmp/loom.csv" ]; then
            python3 "$here/report.py" loom-csv "$tmp/loom.csv" "$lib" "$rep" >>"$raw"
        else  # no CSV: loom-bench's table (size count type redop root time ... algorithm)
            awk -v lib="$lib" -v c="$coll" -v n="$n" -v r="$rep" '{ sub(/^\[[0-9]+\] */, "") }
                !/^#/ && NF >= 10 { printf "%s,%s,%d,%s,%s,,%s,%s,%s,mean-loop\n", lib, c, n, $1, $6, $6, $10, r }' \
                "$tmp/out" >>"$raw"
        fi
    done
}

run_mpi() {  # LIBRARY COLL N SPEC...
    local lib=$1 coll=$2 n=$3
    shift 3
    case "$lib" in
        openmpi) run_logged "$lib $coll N=$n" mpirun.openmpi "${as_root[@]}" --oversubscribe \
            --bind-to none -np "$n" "$bin/peers_openmpi" openmpi "$coll" "$@" ;;
        openmpi-tcp) run_logged "$lib $coll N=$n" mpirun.openmpi "${as_root[@]}" --oversubscribe \
            --bind-to none --mca btl self,tcp -np "$n" "$bin/peers_openmpi" openmpi-tcp "$coll" "$@" ;;
        mpich) run_logged "$lib $coll N=$n" mpirun.mpich -np "$n" "$bin/peers_mpich" mpich "$coll" "$@" ;;
    esac
    add_rows "$tmp/out"
    grep 'iterations (budget' "$tmp/err" >>"$out/cuts.log" || true
}

run_gloo() {  # COLL N SPEC...: N background processes meeting in a FileStore
    local coll=$1 n=$2 r pids=() failed=0
    shift 2
    local store
    store=$(mktemp -d "$tmp/store.XXXX")
    for ((r = 0; r < n; r++)); do
        RANK=$r SIZE=$n STORE=$store timeout "$limit" "$bin/peers_gloo" "$coll" "$@" \
            >"$tmp/gloo.$r" 2>"$tmp/gloo.$r.err" &
        pids+=($!)
    done
    for r in "${!pids[@]}"; do
        wait "${pids[$r]}" || { failed=1; tail -3 "$tmp/gloo.$r.err" >>"$out/errors.log"; }
    done
    [ "$failed" -eq 0 ] || { echo "== gloo $coll N=$n failed" >>"$out/errors.log"; log "gloo $coll N=$n failed"; }
    add_rows "$tmp/gloo.0"
    grep 'iterations (budget' "$tmp/gloo.0.err" >>"$out/cuts.log" || true
}

repeats=${PEERS_REPEATS:-1}
start=$(date +%s)
for n in $ranks; do
    for coll in $collectives; do
        specs=()
        for s in $sizes; do
            b=$(actual_bytes "$coll" "$n" "$(to_bytes "$s")")
            it=$(iters_for "$b")
            specs+=("$b:$it:$(warmup_for "$it"):$budget")
        done
        libs="loom openmpi mpich gloo"
        [ "$n" -eq 2 ] && [ "$coll" = allreduce ] && libs="$libs loom-tcp openmpi-tcp"
        for ((rep = 1; rep <= repeats; rep++)); do
            for lib in $libs; do
                log "N=$n $coll $lib (repeat $rep/$repeats, $(($(date +%s) - start)) s so far)"
                case "$lib" in
                    loom) run_loom loom shm "$coll" "$n" "${specs[@]}" ;;
                    loom-tcp) run_loom loom-tcp tcp "$coll" "$n" "${specs[@]}" ;;
                    gloo) run_gloo "$coll" "$n" "${specs[@]}" ;;
                    *) run_mpi "$lib" "$coll" "$n" "${specs[@]}" ;;
                esac
            done
        done
    done
done
elapsed=$(($(date +%s) - start))
echo "loadavg_at_end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
echo "benchmark_seconds $elapsed s" >>"$out/machine.txt"
python3 "$here/report.py" report "$out"
log "done in $elapsed s: $out/summary.md"
[ -s "$out/errors.log" ] && log "some runs failed: $out/errors.log"
exit 0
