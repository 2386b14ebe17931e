// SPDX-License-Identifier: Apache-2.0
// Routes as the controller serves them: the way between two nodes of the fabric, and a
// node's route table (what a DPU or a forwarding rank loads), knowing which nodes are out
// of service.
//
// Two kinds of fabric, two kinds of routing:
//  - a lattice (the fabric's ranks form a ring, torus or mesh): dimension-ordered routing
//    with its tie rule and dateline VCs, exactly as fabric/routing gives it and the data
//    plane forwards. DOR is deterministic and has no detour: a route through an out node is
//    answered with that node named in `blocked`, not bent around it (the data plane could
//    not follow a bent route, and the dateline proof holds only for DOR);
//  - any other fabric (switches, trees): a shortest path by links over in-service nodes, in
//    which an endpoint is only ever an end, never a hop in between.
// Pure logic over fabric/topology and fabric/routing; no transport.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.hh"
#include "routing/dor.hh"
#include "topology/fabric.hh"
#include "trees.hh"

namespace loom::control {

struct route_step {
    std::string from, to;  // node ids
    int port = -1;         // output port at `from`: a lattice port, else its link's index
    int vc   = 0;          // virtual channel (lattices with dateline VCs)
    int dim  = -1;         // lattice dimension, -1 elsewhere
};

struct route_answer {
    std::string how;                   // "dimension-ordered (toward-plus, dateline VCs)", …
    std::vector<route_step> steps;     // empty when from == to
    std::vector<std::string> blocked;  // lattice: out nodes on the route, "r5 is down"
};

/// The route from node `from` to node `to` (ids; on a lattice both must carry ranks).
result<route_answer> route_between(const topology::fabric& f, const out_of_service& out,
                                   std::string_view from, std::string_view to,
                                   routing::tie_rule ties);

struct table_entry {
    int rank = -1;          // destination rank
    std::string next;       // node id of the next hop; "" for the node's own rank or none
    int port = -1;          // as route_step::port
    int dim  = -1;          //
    std::string vc_rule;    // lattice: "vc0", "keep", "vc1" (routing/route_table.hh)
    bool reachable = true;  // false: no way over in-service nodes (not on a lattice)
};

/// Node `at`'s table, one entry per rank in rank order.
result<std::vector<table_entry>> route_table_of(const topology::fabric& f,
                                                const out_of_service& out, std::string_view at,
                                                routing::tie_rule ties);

}  // namespace loom::control
