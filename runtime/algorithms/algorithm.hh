// SPDX-License-Identifier: Apache-2.0
// The algorithm interface: a pure generator of schedules plus its closed-form α-β cost and
// its constraints (docs/architecture.md#executors; docs/architecture.md#rule-step-vocabulary,
// docs/architecture.md#rule-algorithm-files).
//
// An algorithm never sends a byte and never sees a driver or the engine: it emits steps for
// one rank at a time (so a 4096-rank schedule need never be materialised at once) and states
//   t = n_alpha · α + n_beta · M / BW
// where M is schedule::payload_bytes() of the call (the vector each rank holds; for
// all-to-all the whole send buffer). Each family lives in one file that opens with
// "How it works", "Cost" and "Constraints".
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hh"
#include "routing/dor.hh"
#include "schedule/schedule.hh"
#include "topology/topology.hh"

namespace loom::algorithms {

using schedule::collective;

/// How links are shared (docs/references.md#port-model). per_edge: every communicating pair has its
/// own full-duplex link (the reference texts). single_port: each rank has one full-duplex port into
/// a non-blocking switch, so concurrent sends (or receives) of a rank share it. On a torus or mesh
/// the links are the physical ones either way.
enum class port_model { per_edge, single_port };
std::string_view port_model_name(port_model p);
bool parse_port_model(std::string_view s, port_model* out);

/// Antipodal tie rule for shortest-arc routing on an even ring (docs/references.md#dor-ties);
/// defined with the routes it decides, in fabric/routing.
using tie_rule = routing::tie_rule;

/// One collective call as a generator sees it.
struct call {
    collective coll      = collective::allreduce;
    int nranks           = 1;
    int64_t count        = 0;  // elements, schedule/collective.hh conventions
    uint32_t dtype_size  = 4;
    int root             = 0;
    int peer             = 0;  // sendrecv destination
    int segments         = 1;  // pipeline segments P (>= 1)
    int channels         = 1;  // independent channels, each on a slice of the vector
    tie_rule ties        = tie_rule::toward_plus;
    topology::shape topo = topology::shape::star(1);  // defaults to star:nranks
};

struct cost {
    double n_alpha = 0;         // sequential hops
    double n_beta  = 0;         // multiples of M / BW on the critical path
    bool exact     = true;      // false: an asymptotic "≈" form (pipelining optimum, bounds)
    std::string note;           // port model, errata, validity range
    double n_alpha_switch = 0;  // rank ↔ aggregation-node hops (in-network algorithms)
    double n_alpha_flat   = 0;  // hand-offs through the node's flat segment (flat.cc)

    /// alpha_switch_s < 0: the aggregation node's hops cost alpha_s too; alpha_flat_s < 0:
    /// so does a hand-off through the flat segment.
    double time_s(double alpha_s, double bw_bytes_per_s, double bytes, double alpha_switch_s = -1,
                  double alpha_flat_s = -1) const {
        return n_alpha * alpha_s +
               n_alpha_switch * (alpha_switch_s < 0 ? alpha_s : alpha_switch_s) +
               n_alpha_flat * (alpha_flat_s < 0 ? alpha_s : alpha_flat_s) +
               n_beta * bytes / bw_bytes_per_s;
    }
};

struct cost_query {
    collective coll      = collective::allreduce;
    int nranks           = 1;
    double bytes         = 0;  // M
    int root             = 0;  // as in the call (sendrecv: root == peer is a local copy)
    int peer             = 0;
    int segments         = 1;
    port_model ports     = port_model::per_edge;
    tie_rule ties        = tie_rule::toward_plus;
    topology::shape topo = topology::shape::star(1);
};

struct algorithm {
    std::string_view name;  // as used by the API, LOOM_ALGO and the tools
    collective primitive;
    std::string_view summary;      // one line: how it works
    std::string_view formula;      // the cost, e.g. "2(N-1)α + 2(N-1)/N·M/BW"
    std::string_view constraints;  // e.g. "any N; any count"
    /// ok, or LOOM_ERR_NOT_APPLICABLE with the reason (not a power of two, needs a torus…).
    status (*applicable)(const call& c);
    /// Appends rank `rank`'s steps; sets its scratch size through the builder.
    status (*build)(const call& c, int rank, schedule::builder& b);
    cost (*predict)(const cost_query& q);
    /// True where the schedule already talks only over the fabric's physical links (dims,
    /// dor-relay) so its own cost is the lattice cost; false for the topology-oblivious
    /// algorithms, whose lattice cost algorithms::predict() counts from the schedule.
    bool topology_aware = false;
    /// True where the steps run on an aggregation node (inc_push/inc_pull): the algorithm
    /// applies only where the communicator's node admitted it and reduces the call's dtype
    /// and op, a constraint the runtime checks (tuner::admits) beside `applicable`.
    bool in_network = false;
    /// True where the gain over another algorithm comes from a rank driving two links at once
    /// (both neighbours of a ring: bidir-ring). On a switch the runtime's ranks share one port
    /// (a NIC, or one host's memory), so the tuner costs such an algorithm single-port there
    /// (tuner.cc): measured over shm at N = 4, bidir-ring took 1.4x ring's time at 64 KiB and
    /// 1 MiB and the same at 16 MiB, where the per-edge form promised half the BW term.
    bool two_links_at_once = false;
    /// True where the steps (inc_push/inc_pull) run on the node's flat shared segment
    /// (flat.cc): the algorithm applies only where every rank of the communicator shares one
    /// node over shm, the segment was set up on all of them and the call fits its slots, a
    /// constraint the runtime checks (tuner::admits) beside `applicable`.
    bool node_local = false;
};

/// Every algorithm, in catalogue order.
std::span<const algorithm* const> catalogue();
const algorithm* find(collective coll, std::string_view name);
/// The names applicable to a call, for "allowed: …" messages.
std::string names_for(collective coll);

/// Checks a call (N ≥ 1, count ≥ 0, root/peer in range, topology size = N, segments and
/// channels ≥ 1) and the algorithm's own constraints.
status check_call(const algorithm& a, const call& c);
/// One rank's steps (channels applied).
result<schedule::rank_schedule> generate_rank(const algorithm& a, const call& c, int rank);
/// The header of `a`'s schedule for call `c`.
schedule::schedule_info schedule_info_for(const algorithm& a, const call& c);
/// The whole schedule, every rank, with its info filled in.
result<schedule::schedule> generate(const algorithm& a, const call& c);
/// The query for a call (M = `bytes`).
cost_query query_for(const call& c, double bytes, port_model ports);

/// The cost of running `a` for call `c` with payload M = `bytes`: the algorithm's closed form
/// on a switch (star, full mesh); on a ring, torus or mesh, a topology-oblivious algorithm's
/// logical hops cross physical links, so its schedule is routed (dimension-ordered, the
/// call's tie rule) and counted round by round: α per physical hop of the longest route,
/// the busiest physical link's bytes per round (cut-through, links shared within a round).
/// The count generates the whole schedule, so it is bounded by steps, not ranks: a schedule
/// of more than `lattice_count_step_limit` steps (estimated as N times rank 0's; the log-depth
/// algorithms stay under it at 4096 ranks and beyond, the N² ones such as the flat ring pass
/// it near 1500 ranks) is not counted, and the closed form is returned as what it is there, a
/// lower bound (marked not exact, with a note): each logical hop crosses at least one physical
/// link and each round's busiest link carries at least its largest message.
cost predict(const algorithm& a, const call& c, double bytes, port_model ports);
constexpr int64_t lattice_count_step_limit = int64_t{1} << 22;

}  // namespace loom::algorithms
