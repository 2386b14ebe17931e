// SPDX-License-Identifier: Apache-2.0
// In-network family (SHARP / SwitchML): all-reduce, reduce and broadcast through an
// aggregation node.
//
// How it works
//   Every rank pushes its vector into the network once (inc_push: the aggregation node
//   adds the contributions of all ranks slot by slot) and pulls the result back (inc_pull:
//   the node multicasts each finished slot). With P segments the vector goes as P
//   independent push/pull pairs (tags 0..P-1), so segment s is reduced and on its way back
//   while segment s+1 is still going up.
//   allreduce: every rank pushes and pulls every segment.
//   reduce:    every rank pushes; only the root pulls (the ALU half).
//   broadcast: only the root pushes; every rank pulls (the multicast half).
//   The runtime streams each segment in protocol-sized chunks (inc/client: 8 KiB packets
//   through a window of slots), so on the wire P is in effect M / 8 KiB; the schedule's P
//   is the granularity the simulator models.
//
// Cost (α_switch: one rank ↔ node hop; the up- and down-links are full duplex)
//   all three:  2·α_switch + (1 + 1/P)·M/BW
//     segment s leaves a rank at s·M/(P·BW) (its up-link is a FIFO), is ready at the node
//     one α_switch after its last byte, and its pull needs α_switch + M/(P·BW) on the
//     down-link, which is free by then: the last pull ends at 2α_switch + (P+1)·M/(P·BW).
//     As P grows this is the 2·α_switch + M/BW: each byte crosses one up-link and
//     one down-link, in parallel, and no rank relays anything (the software algorithms'
//     O(N) or O(log N) hops and 2·M/BW). An ALU latency at the node adds to it once.
//   Each extra level of an aggregation tree adds 2·α_switch (one hop up, one down).
//   topology_aware: its hops go to the aggregation node, never over lattice links, so
//   the form holds on any shape (the simulator gives every rank its own node link).
//
// Constraints
//   Any N ≥ 1, any count, any root, P ≥ 1. The runtime also needs an aggregation node
//   that admitted the communicator (loom-switch; dtypes int32, int64, float32, float64,
//   bfloat16, float16; ops sum, min, max, avg as a sum): `in_network` marks that, and
//   without it the algorithm is not applicable (the tuner ranks the others; an explicit
//   choice fails the call, on every rank alike).
#include "families.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

status build_inc(const call& c, int rank, schedule::builder& b) {
    const bool pushes      = c.coll != collective::broadcast || rank == c.root;
    const bool pulls       = c.coll != collective::reduce || rank == c.root;
    const int contributors = c.coll == collective::broadcast ? 1 : c.nranks;
    for (int s = 0; s < c.segments; ++s) {
        int64_t off = segment_offset(c.count, c.segments, s);
        int64_t n   = segment_size(c.count, c.segments, s);
        auto slot   = static_cast<uint32_t>(s);
        if (pushes) {
            b.inc_push(schedule::in(off, n), slot, contributors);
        }
        if (pulls) {
            b.inc_pull(schedule::out(off, n), slot, contributors);
        }
    }
    return status::ok();
}

cost cost_inc(const cost_query& q) {
    cost k;  // one rank, too, makes the round trip through the node: the same form
    k.n_alpha_switch = 2;
    k.n_beta         = 1 + 1.0 / q.segments;
    k.note           = "in-network: α_switch per rank-node hop; P segments pipeline up and down";
    return k;
}

// The three primitives differ only in who pushes and who pulls (build_inc).
constexpr algorithm inc_for(collective coll, std::string_view summary,
                            std::string_view constraints) {
    return {"inc",    coll, summary, "2α_switch + (1+1/P)·M/BW", constraints, any_call, build_inc,
            cost_inc, true, true};
}

constexpr algorithm allreduce_inc =
    inc_for(collective::allreduce,
            "every rank pushes into the aggregation node, which sums all contributions and "
            "multicasts the result",
            "any N, any count; needs an aggregation node");
constexpr algorithm reduce_inc = inc_for(
    collective::reduce, "every rank pushes into the aggregation node; the root pulls the sum",
    "any N, any count, any root; needs an aggregation node");
constexpr algorithm broadcast_inc =
    inc_for(collective::broadcast, "the root pushes into the aggregation node, which multicasts it",
            "any N, any count, any root; needs an aggregation node");

}  // namespace

std::vector<const algorithm*> family_inc() {
    return {&allreduce_inc, &reduce_inc, &broadcast_inc};
}

}  // namespace loom::algorithms
