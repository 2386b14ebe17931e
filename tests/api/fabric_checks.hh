// SPDX-License-Identifier: Apache-2.0
// Checks of where the bytes go over a fabric (loomrun --fabric: fwd:<driver>), read from the
// link counters of loom_comm_link_stats around single calls. Failures are recorded in the
// rank_context like the sweep's.
#pragma once

#include "proc_launch.hh"
#include "routing/dor.hh"
#include "topology/topology.hh"

namespace loom::test::api {

/// Every link the communicator lists joins two physical neighbours, each neighbour once.
void check_links_are_neighbours(rank_context& ctx, const topology::shape& fabric);

/// dor-relay all-to-all: on every directed link this rank drives, the bytes sent equal the
/// number of (source, destination) routes that cross it (routing::route under `ties`) times
/// the block size, and nothing is forwarded by the driver (the schedule relays every hop
/// itself). docs/references.md#dor-ties's 4x4 counts under either tie rule. With `segments`
/// P > 1 each block crosses each link as P messages (uneven when P does not divide it), and
/// the bytes are still the routes' loads.
void check_dor_relay_link_loads(rank_context& ctx, const topology::shape& fabric,
                                routing::tie_rule ties, int segments = 1);

/// dims all-reduce: each phase talks only along its own dimension. From the schedule: every
/// send goes to a neighbour along exactly one dimension, and the dimensions of the sends in
/// step order run 0, 1, …, k−1, …, 1, 0 (reduce-scatter up, all-gather down; dimensions of
/// size 1 have no phase). From the run: each link carries exactly the bytes the schedule
/// sends to that neighbour and the driver forwards nothing, so every phase's bytes crossed
/// the one link of its dimension.
void check_dims_phases(rank_context& ctx, const topology::shape& fabric, routing::tie_rule ties);

}  // namespace loom::test::api
