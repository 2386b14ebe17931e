#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the API workload (every rank: loom_comm_create(NULL), then the collective sweep)
# under a launcher loom does not control, so nothing loom-specific is set up:
#   run_launcher.sh openmpi LOOMRUN PROGRAM   mpirun.openmpi -n 4 PROGRAM --from-env
#   run_launcher.sh netns   LOOMRUN PROGRAM   loomrun --hosts netns -n 4 --transport tcp
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
*)
    echo "run_launcher.sh: unknown launcher '$kind'" >&2
    exit 2
    ;;
esac
