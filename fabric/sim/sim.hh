// SPDX-License-Identifier: Apache-2.0
// The discrete-event simulator (docs/architecture.md#executors, executor 3): how long a schedule
// takes on a modeled fabric. The umbrella header of fabric/sim (docs/architecture.md#rule-headers).
//
// The model
//   Links are full duplex: each direction is its own FIFO server of bandwidth
//   efficiency·BW. A transfer (a send matched with its receive) of B bytes crosses the
//   links of its path; it pays α per hop and B/(efficiency·BW) once (cut-through: the
//   chunks of a message pipeline over the hops, so the bytes are paid over the bottleneck
//   only). On link k of its path it holds the link for B/(efficiency·BW) from the moment
//   its head gets there and the link is free: the head reaches link 1 at t_1 = start and
//   link k+1 at t_{k+1} = s_k + lat_k, where s_k = max(t_k, free_k); finish =
//   s_h + lat_h + B/(efficiency·BW). Each link direction is a FIFO server in the order the
//   heads reach it (ties: the order those arrivals were scheduled), so a transfer started
//   later whose head gets to a free link first uses it, as a real link would; hops are
//   events, served when the head gets there (a one-hop path needs no extra event).
//   Paths:
//     star/fullmesh, per-edge     one link per ordered pair of ranks, α (Lu-CA's model)
//     star/fullmesh, single-port  rank → switch (α) then switch → rank (no second α:
//                                 a star hop is one α, docs/references.md#star-hop-alpha); a rank's
//                                 sends share its up-link, its receives its down-link
//                                 (docs/references.md#port-model)
//     ring, torus, mesh           the physical neighbour links of the dimension-ordered
//                                 route (fabric/routing, the fabric's tie rule), α each;
//                                 the port model does not matter (algorithm.hh)
//     inc_push / inc_pull         rank → aggregation node and back, α each, on a link of
//                                 their own (single-port: the rank's switch port); with
//                                 fabric::alpha_switch_s set, α_switch each on the links of
//                                 their own in every port model (the node is a separate
//                                 device, so its hops neither cost α nor share the ports)
//   In-network aggregation: every inc_push of a slot (step tag) lands at the aggregation
//   node; the slot's result is ready when the last push has arrived plus the ALU latency,
//   and an inc_pull delivers it (it starts when both it and the result are ready).
//   Local steps (local_reduce, local_copy) take γ per byte of their destination (default
//   0); the reduction inside recv_reduce is part of the transfer.
//   Per-link α and BW (fabric::per_link, from a fabric file: on_fabric()). Each link
//   direction has its own α and efficiency·BW; without per_link every link has alpha_s and
//   bw_bytes_per_s (the uniform case: the same arithmetic, nothing looked up). A transfer's
//   bytes then pass each link at the pace of the slowest link they have crossed so far:
//   link k is held for B / min(rate_1..rate_k) and the transfer finishes at
//   s_h + α_h + B / min(rate_1..rate_h) (uniform: B/(efficiency·BW), as above). Which file
//   link a modeled link takes: ring/torus/mesh and fullmesh, the link between the two ranks;
//   star, the rank's link to the switch (per-edge: a pair's link has the sender's α and the
//   slower of the two ports' BW; single-port: the rank's port both ways; one α per star hop,
//   the sender's). Aggregation links: a star rank's port; elsewhere alpha_s, bw_bytes_per_s.
// Semantics are the verifier's (runtime/schedule/verifier.hh): a step is ready when its
// dependencies are done; the k-th send a → b with tag t meets the k-th receive at b from a
// with tag t; a transfer starts when both its send and its receive are ready (rendezvous),
// and both complete when its last byte arrives.
//
// Observed costs. Every time in the run carries its parts: α hops, seconds of bytes over a
// link, and other seconds (γ, ALU). The finishing time's parts give n_alpha (α units on the
// critical path) and n_beta (seconds of bytes · BW / M, so efficiency < 1 shows as a larger
// n_beta), directly comparable with algorithms::predict(). Where two times tie exactly the
// parts of the first found are kept. With alpha_switch_s set, the aggregation node's hops
// count apart, as n_alpha_switch (α_switch units), to compare with cost::n_alpha_switch.
//
// Lean at scale: each rank's steps are generated on demand (algorithms::generate_rank) and
// compiled into 28-byte records with their dependents; events live in one heap; transfers
// whose head is still crossing links are pooled records; nothing is allocated per event.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/algorithm.hh"
#include "base/status.hh"
#include "routing/dor.hh"
#include "schedule/schedule.hh"
#include "topology/fabric.hh"
#include "topology/topology.hh"

namespace loom::sim {

/// The α and BW of each link of a shape, taken from a fabric file (on_fabric()).
struct link_costs {
    struct cost {
        double alpha_s        = 0;
        double bw_bytes_per_s = 0;
    };
    topology::shape shape;  // the shape they are for (fabric::topo must be the same)
    /// star: rank r's link to the switch; empty otherwise.
    std::vector<cost> port;
    /// ring, torus, mesh, fullmesh: the link between two ranks, keyed (low << 32 | high).
    std::unordered_map<uint64_t, cost> pair;
    /// The slowest link among them: the largest α, the smallest BW (maybe different links).
    cost slowest;

    static uint64_t key(int a, int b) {
        auto lo = static_cast<uint64_t>(a < b ? a : b), hi = static_cast<uint64_t>(a < b ? b : a);
        return lo << 32 | hi;
    }
};

/// The modeled fabric. Units per docs/architecture.md#conventions.
struct fabric {
    topology::shape topo         = topology::shape::star(1);
    algorithms::port_model ports = algorithms::port_model::per_edge;
    routing::tie_rule ties       = routing::tie_rule::toward_plus;
    double alpha_s               = 1e-6;  // latency per hop
    double bw_bytes_per_s        = 25e9;  // per link direction
    double efficiency            = 1;     // (0, 1]: the share of BW a hop delivers
    double alu_latency_s         = 0;     // aggregation node: last push → result ready
    double gamma_s_per_byte      = 0;     // local_reduce / local_copy
    /// Latency of one rank ↔ aggregation-node hop (inc_push / inc_pull). Negative: unset,
    /// those hops cost alpha_s and (single-port) share the rank's switch port, as before
    /// α_switch existed. Per-link costs keep the port's BW on those hops either way.
    double alpha_switch_s = -1;
    /// Each link's own α and BW; null: every link has alpha_s and bw_bytes_per_s. With it,
    /// alpha_s and bw_bytes_per_s are only the units of the report's n_alpha and n_beta
    /// (on_fabric() sets them to the slowest link's).
    std::shared_ptr<const link_costs> per_link;
};

/// The shape a fabric's ranks form, for routing: the file's "shape" when it names one; else
/// inferred: coordinates on every rank give a mesh, or a torus/ring where every dimension
/// longer than 2 has its wraparound link (a dimension of 2 or less: torus); without
/// coordinates a switch linked to every rank is a star, a link between every pair of ranks
/// a full mesh, links r to r+1 mod N a ring. invalid_argument says what is missing.
result<topology::shape> shape_of(const topology::fabric& f);

/// A simulator fabric on a topology::fabric (a fabric file or fabric_from_shape()): its
/// shape (shape_of), each link's α and BW (per_link), and alpha_s/bw_bytes_per_s set to the
/// slowest link's; the other fields from `base`. invalid_argument names a link the shape
/// needs and the file lacks, a link between two ranks the shape does not have, or a star
/// rank without a switch link; a non-empty `origin` (the file's path) is named in it.
result<fabric> on_fabric(const topology::fabric& f, const fabric& base = {},
                         std::string_view origin = "");

/// ok, or invalid_argument naming the bad field (rates > 0, times ≥ 0 and finite,
/// alpha_switch_s finite (negative: unset),
/// 0 < efficiency ≤ 1, topology of `nranks` ranks, per_link for that topology; a full mesh
/// with per_link is per-edge only).
status check_fabric(const fabric& f, int nranks);

/// What started a step of the critical path last.
enum class gate : uint8_t {
    none,     // ready at time 0 (no dependencies)
    own,      // its own dependencies (local steps; the later side of a rendezvous)
    partner,  // the matching step on the peer became ready later
    link,     // a link of its path was still busy with another transfer (the chain goes on
              // from what held that one back before it took the link)
    slot,     // inc_pull: the aggregation slot's result
};
std::string_view gate_name(gate g);

/// One step of the critical path.
struct chain_step {
    int rank      = 0;
    uint32_t step = 0;
    schedule::step_kind kind{};
    int peer      = -1;  // transfer peer; -1 otherwise
    int64_t bytes = 0;
    gate why      = gate::none;  // what the chain goes back through from here
    std::string link;            // why == link: the busy link
};

struct link_report {
    std::string name;  // "3->4", "3->switch", "switch->4", "3->agg", "agg->3"
    int64_t bytes      = 0;
    int64_t messages   = 0;
    double busy_s      = 0;  // Σ bytes / (efficiency·BW)
    double utilisation = 0;  // busy_s / time_s
};

struct report {
    double time_s         = 0;
    double n_alpha        = 0;  // α units on the critical path
    double n_alpha_switch = 0;  // α_switch units on it (0 unless fabric::alpha_switch_s ≥ 0)
    double n_beta         = 0;  // seconds of bytes on the critical path · BW / M
    double other_s        = 0;  // γ and ALU seconds on the critical path
    double payload_bytes  = 0;  // M (schedule::payload_bytes)
    // The step that finished last (-1 when nothing ran) and the last link it crossed.
    int last_rank      = -1;
    uint32_t last_step = 0;
    std::string last_link;
    std::vector<chain_step> chain;  // critical path, first step first
    int64_t steps      = 0;
    int64_t transfers  = 0;  // matched send/receive pairs, pushes and pulls
    int64_t events     = 0;
    int64_t link_bytes = 0;  // Σ bytes × links crossed
    int64_t links_used = 0;
    std::vector<link_report> top_links;  // by bytes, then by name; at most options::top_links
    std::vector<double> idle_s;          // per rank: time_s minus time with a transfer or
                                         // a γ step in progress
};

struct options {
    size_t top_links = 10;
    /// Run the verifier's structure/matching/deadlock passes before simulating a schedule
    /// given whole (hand-written ones), for its precise messages.
    bool verify_first = true;
};

/// Simulates a whole schedule (e.g. loaded from JSON). The fabric's topology must have
/// s.info.nranks ranks.
result<report> simulate(const schedule::schedule& s, const fabric& f, const options& o = {});

/// Simulates algorithm `a` for call `c`, generating each rank's steps on demand. The fabric's
/// shape and tie rule are the call's (c.topo, c.ties); f.topo and f.ties are not used.
result<report> simulate(const algorithms::algorithm& a, const algorithms::call& c, const fabric& f,
                        const options& o = {});

}  // namespace loom::sim
