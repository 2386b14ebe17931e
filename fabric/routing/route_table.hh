// SPDX-License-Identifier: Apache-2.0
// Route tables: what a router (a rank's DPU or the engine's forwarder) looks up per chunk.
//
// One table per router, one entry per destination rank, in a flat array indexed by the
// destination, so forwarding is one load (O(1)) with no coordinates or arcs computed on
// the hot path. Entries are built from next_hop_vc (dateline.hh), so walking the tables
// hop by hop gives exactly route() / route_hops().
//
// The VC cannot be stored per destination alone: whether a chunk already crossed the
// dateline depends on where it entered the ring, which the router does not know from the
// destination. So an entry stores a rule, applied to how the chunk arrived (out_vc):
//   vc0   no VCs here (mesh, size-2 or no wrapping dimension, star, full mesh, VCs off);
//   keep  the arrival VC when the chunk arrived along the same dimension, else VC0;
//   vc1   this hop crosses the dateline.
//
// Cost: one table is N entries of 12 bytes, built in O(N·dims); build_route_tables makes
// all N of them (N² entries: meant for tests and small fabrics).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "routing/dateline.hh"

namespace loom::routing {

enum class vc_rule : uint8_t { vc0, keep, vc1 };

struct route_entry {
    int32_t next = -1;  // the neighbour to send to; -1 in the router's own entry
    /// Output port: port_of() on a lattice; 0 (the switch up-link) on a star; on a full
    /// mesh the link to `next`, numbered as shape::neighbours() lists them.
    int32_t port = -1;
    int16_t dim  = -1;  // dimension of the hop; -1 on star and full mesh
    vc_rule vc   = vc_rule::vc0;
};
static_assert(sizeof(route_entry) <= 12, "a table is N entries: keep them small");

/// The VC a chunk leaves on: `rule` applied to the dimension (-1 at the source) and VC it
/// arrived on, and the dimension of the entry.
inline int out_vc(vc_rule rule, int arrival_dim, int arrival_vc, int dim) {
    if (rule == vc_rule::vc1) {
        return 1;
    }
    return rule == vc_rule::keep && arrival_dim == dim ? arrival_vc : 0;
}

class route_table {
  public:
    /// The table of router `router` (a rank of `s`).
    static route_table build(const topology::shape& s, int router, tie_rule ties, vc_policy vcs);

    int router() const { return router_; }
    /// The entry for destination `dst` (0 <= dst < N).
    const route_entry& to(int dst) const { return entries_[dst]; }
    std::span<const route_entry> entries() const { return entries_; }

  private:
    int router_ = -1;
    std::vector<route_entry> entries_;
};

/// Every router's table, indexed by rank.
std::vector<route_table> build_route_tables(const topology::shape& s, tie_rule ties, vc_policy vcs);

}  // namespace loom::routing
