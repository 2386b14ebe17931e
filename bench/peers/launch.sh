#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Launch + init + barrier + teardown of an N-rank job (default 8): loomrun against Open
# MPI's and MPICH's mpirun, the same probe program (launch_probe.c), median wall time of
# REPEATS launches each, interleaved. Needs the loom build in build-peers (run.sh makes it)
# and the MPI packages run.sh installs.
# Usage: bench/peers/launch.sh [N] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-8}
repeats=${2:-7}
bin=build-peers/peers
mkdir -p "$bin"
cc -O2 -Wall -Wextra -Werror -DPROBE_LOOM -Iruntime/include bench/peers/launch_probe.c \
    -o "$bin/launch_probe_loom" -Lbuild-peers/runtime -lloom -Wl,-rpath,"$PWD/build-peers/runtime"
mpicc.openmpi -O2 -Wall -Wextra -Werror bench/peers/launch_probe.c -o "$bin/launch_probe_openmpi"
mpicc.mpich -O2 -Wall -Wextra -Werror bench/peers/launch_probe.c -o "$bin/launch_probe_mpich"
root_flag=()
[ "$(id -u)" -ne 0 ] || root_flag=(--allow-run-as-root)

ms() {  # CMD...: wall time in ms
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || { echo "launch.sh: failed: $*" >&2; echo -1; return; }
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
declare -A times
for ((r = 0; r < repeats; r++)); do
    times[loom]+="$(ms build-peers/tools/loomrun/loomrun -n "$n" -- "$bin/launch_probe_loom") "
    times[openmpi]+="$(ms mpirun.openmpi "${root_flag[@]}" --oversubscribe -np "$n" \
        "$bin/launch_probe_openmpi") "
    times[mpich]+="$(ms mpirun.mpich -np "$n" "$bin/launch_probe_mpich") "
done
echo "launch + init + barrier + teardown, N = $n, median of $repeats (ms):"
for lib in loom openmpi mpich; do
    # shellcheck disable=SC2086 # the list is space-separated numbers
    median=$(printf '%s\n' ${times[$lib]} | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    printf '  %-8s %6s   (all: %s)\n' "$lib" "$median" "${times[$lib]}"
done
