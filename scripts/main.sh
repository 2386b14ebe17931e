#!/usr/bin/env bash
# loom's main job on the embedded default: no hardware, no configuration.
# Builds, then shows the algorithm catalogue and the predicted all-reduce cost of every
# algorithm on a 4x4x4 torus and on a 64-port switch (loom-sim overview).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
exec build/tools/loom-sim/loom-sim overview "$@"
