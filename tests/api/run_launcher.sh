#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the API workload (every rank: loom_comm_create(NULL), then the collective sweep)
# under a launcher loom does not control, so nothing loom-specific is set up:
#   run_launcher.sh openmpi LOOMRUN PROGRAM   mpirun.openmpi -n 4 PROGRAM --from-env
#   run_launcher.sh netns   LOOMRUN PROGRAM   loomrun --hosts netns -n 4 --transport tcp
#   run_launcher.sh netns-ofi LOOMRUN PROGRAM loomrun --hosts netns -n 4 --transport ofi,
#                                             provider tcp;ofi_rxm (each rank binds its
#                                             namespace's address: LOOM_OFI_ADDR)
# Exit 77 (meson: skipped, with the reason printed) where the launcher cannot run here.
set -u
kind=$1 loomrun=$2 program=$3
case "$kind" in
openmpi)
    mpirun=$(command -v mpirun.openmpi) || { echo "SKIP: mpirun.openmpi is not installed (apt-get install openmpi-bin)"; exit 77; }
    # Root in a container is the usual CI case; Open MPI refuses it unless told twice.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    exec timeout 240 "$mpirun" -n 4 --oversubscribe "$program" --from-env
    ;;
netns)
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: --hosts netns needs root"; exit 77; }
    command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) is not installed"; exit 77; }
    exec "$loomrun" -n 4 --transport tcp --hosts netns --timeout 200 -- "$program" --from-env
    ;;
netns-ofi)
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: --hosts netns needs root"; exit 77; }
    command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) is not installed"; exit 77; }
    # The driver and the provider must be there; a missing one is said, not counted as a pass.
    "$loomrun" --version | grep -q "ofi: enabled" ||
        { echo "SKIP: this loom has no ofi driver ($("$loomrun" --version | tail -n 1))"; exit 77; }
    if command -v fi_info >/dev/null && ! fi_info -p 'tcp;ofi_rxm' >/dev/null 2>&1; then
        echo "SKIP: libfabric offers no tcp;ofi_rxm provider here (fi_info -l lists those it has)"
        exit 77
    fi
    export LOOM_OFI_PROVIDER='tcp;ofi_rxm'
    exec "$loomrun" -n 4 --transport ofi --hosts netns --timeout 200 -- "$program" --from-env
    ;;
*)
    echo "run_launcher.sh: unknown launcher '$kind'" >&2
    exit 2
    ;;
esac
