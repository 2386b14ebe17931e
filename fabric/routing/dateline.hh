// SPDX-License-Identifier: Apache-2.0
// Virtual channels on the rings of a torus: the dateline rule (Dally & Seitz).
//
// Why. Dimension-ordered routing cannot deadlock across dimensions (a chunk never turns
// back to an earlier dimension), but inside one ring the minimal routes chain the ring's
// links into a cycle once arcs are two hops or longer (ring:5 and up, or ring:4 with ties
// toward +), so wormhole/credit-based forwarding can deadlock. Splitting each link into two
// virtual channels (VCs) and moving chunks to VC1 at one fixed place per ring breaks it.
//
// The rule. On every wrapping dimension of size n >= 3 the dateline is the wraparound link
// between coordinates n-1 and 0 (both directions). A chunk enters each dimension on VC0;
// the hop that crosses the dateline and every later hop in that dimension use VC1; the next
// dimension starts again on VC0 (reset per dimension). A minimal arc is shorter than the
// ring, so it crosses the dateline at most once, and VC1 never reaches the dateline again:
// no cycle on either VC. A dimension of size 2 is one link (no wraparound to cut) and a mesh
// has none, so they stay on VC0.
//
// A channel is (directed link, vc); a hop names its link by the ranks at both ends and by
// its output port: 2·dim for +, 2·dim + 1 for − (one port, 2·dim, on a size-2 dimension
// where both ways are the same link). On star and full mesh a hop is direct: dim −1,
// port direct_port().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "routing/dor.hh"

namespace loom::routing {

enum class vc_policy { none, dateline };
std::string_view vc_policy_name(vc_policy p);  // "none", "dateline"

/// VCs the policy uses on the shape: 2 for dateline on a wrapping dimension of size >= 3,
/// else 1.
int vc_count(const topology::shape& s, vc_policy p);

/// Output port of a lattice hop along `dim` by `step` (see above).
int port_of(const topology::shape& s, int dim, int step);

/// Output port of a direct hop on a star (0: the one up-link) or a full mesh (one port
/// per peer, numbered in shape::neighbours() order).
int direct_port(const topology::shape& s, int from, int to);

/// True when leaving coordinate `from` by `step` on a dimension of size n crosses the
/// dateline: a wrapping dimension with n >= 3, n-1 → 0 going +, 0 → n-1 going −.
bool crosses_dateline(int n, bool wraps, int from, int step);

/// The VC of a hop along `dim`: VC1 when it crosses the dateline, the arrival VC when the
/// chunk arrived along the same dimension (arrival_dim; -1 at the source), else VC0.
int hop_vc(vc_policy p, bool crosses, int arrival_dim, int arrival_vc, int dim);

struct hop {
    int from = -1;  // ranks at both ends
    int to   = -1;
    int dim  = -1;  // -1 on star and full mesh
    int step = 0;   // +1 / -1; 0 on star and full mesh
    int port = 0;   // the output port at `from`: port_of on a lattice, else direct_port
    int vc   = 0;
};

/// The hop from `at` toward dst (at != dst) for a chunk that arrived along arrival_dim on
/// arrival_vc (-1 and 0 at the source).
hop next_hop_vc(const topology::shape& s, int at, int dst, int arrival_dim, int arrival_vc,
                tie_rule ties, vc_policy p);

/// The hops of route(s, src, dst, ties) with their VCs; empty when src == dst.
std::vector<hop> route_hops(const topology::shape& s, int src, int dst, tie_rule ties, vc_policy p);

/// A channel: a directed link (rank → rank) and a virtual channel.
struct channel {
    int from                              = -1;
    int to                                = -1;
    int vc                                = 0;
    bool operator==(const channel&) const = default;
};

/// "5(1,2) -> 6(1,3) vc1": ranks with their coordinates on a lattice.
std::string channel_name(const topology::shape& s, const channel& c);

}  // namespace loom::routing
