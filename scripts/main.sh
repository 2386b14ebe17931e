#!/usr/bin/env bash
# loom's main job on the embedded default: no hardware, no configuration.
# Builds, then
#  1. measures: 4 local ranks (loomrun, shared-memory transport) run a checked all-reduce
#     from 8 B to 4 MiB through the real engine and print nccl-tests-style rows (loom-bench);
#  2. predicts: the algorithm catalogue and the all-reduce cost of every algorithm on a
#     4x4x4 torus and on a 64-port switch (loom-sim overview).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
echo "== measured: all-reduce, 4 ranks over shm (loomrun -n 4 -- loom-bench allreduce -c)"
build/tools/loomrun/loomrun -n 4 --transport shm --timeout 120 -- \
    build/tools/loom-bench/loom-bench allreduce -b 8 -e 4M -f 8 -n 20 -w 3 -c
echo
echo "== predicted: loom-sim overview"
exec build/tools/loom-sim/loom-sim overview "$@"
