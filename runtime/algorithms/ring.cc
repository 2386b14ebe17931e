// SPDX-License-Identifier: Apache-2.0
// Ring family: broadcast, reduce, allreduce, reduce_scatter, allgather.
//
// How it works
//   Ranks form the ring 0 → 1 → … → N-1 → 0.
//   allreduce (Patarasuk–Yuan): a reduce-scatter then an all-gather, each N-1 steps; in
//     every step every rank sends one block (M/N) right and receives one from the left.
//     Composed from ring_patterns (ring_reduce_scatter ∘ ring_allgather), as UCC does.
//   reduce_scatter / allgather: one of the two phases alone. Rank r ends with block r.
//   broadcast / reduce: a chain from the root (root, root+1, …) cut into P segments that
//     flow down (broadcast) or up toward the root with a reduction at each hop (reduce).
// Nomenclature: a "block" is the 1/N share of the vector a rank owns in RS/AG; a "segment"
// is a pipeline piece (1/P) of a chain.
//
// Cost (per-edge and single-port alike: each rank uses one link in and one out per step)
//   allreduce        2(N-1)α + 2(N-1)/N · M/BW                 (Lu-CA §5.1; N=4: 6α + 1.5·M/BW)
//   reduce_scatter   (N-1)α + (N-1)/N · M/BW                   (Lu-CA §6)
//   allgather        (N-1)α + (N-1)/N · M/BW                   (Lu-CA §6)
//   broadcast/reduce (N+P-2)(α + M/(P·BW)) exact for P segments (Lu-CA §3.1, §4.1);
//                    ≈ (N-1)α + M/BW at the optimum P* = √((N-2)M/(αBW)), with the exact
//                    optimum one α below the printed one (docs/references.md#pipelined-optimum).
// M is the full vector for every primitive here (the gathered vector for allgather).
// Counts that N does not divide give blocks one element apart; the forms are exact when N
// (or P) divides the count.
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < N), any root, any topology (the ring is
//   logical: on a torus or mesh a flat ring pays the physical hops between consecutive
//   ranks, which the simulator models and these closed forms do not).
#include "families.hh"
#include "ring_patterns.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

// The chain from the root: members[k] = (root + k) mod N.
std::vector<int> chain_from_root(int n, int root) {
    std::vector<int> members(n);
    for (int k = 0; k < n; ++k) {
        members[k] = (root + k) % n;
    }
    return members;
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    auto members = identity_members(c.nranks);
    vector_at in{buffer_id::input, 0}, out{buffer_id::output, 0};
    auto blocks = block_layout::even(c.count, c.nranks);
    auto rs = ring_reduce_scatter(b, members, rank, blocks, in, out, out.block(blocks, rank), {});
    ring_allgather(b, members, rank, blocks, out.block(blocks, rank), out, rs);
    return status::ok();
}

status build_reduce_scatter(const call& c, int rank, schedule::builder& b) {
    auto members = identity_members(c.nranks);
    b.need_scratch(c.count);
    ring_reduce_scatter(b, members, rank, block_layout::even(c.count, c.nranks),
                        {buffer_id::input, 0}, {buffer_id::scratch, 0},
                        schedule::out(0, schedule::block_size(c.count, c.nranks, rank)), {});
    return status::ok();
}

status build_allgather(const call& c, int rank, schedule::builder& b) {
    auto members = identity_members(c.nranks);
    ring_allgather(b, members, rank, block_layout::even(c.count, c.nranks),
                   schedule::in(0, schedule::block_size(c.count, c.nranks, rank)),
                   {buffer_id::output, 0}, {});
    return status::ok();
}

status build_broadcast(const call& c, int rank, schedule::builder& b) {
    auto members = chain_from_root(c.nranks, c.root);
    int me       = mod(rank - c.root, c.nranks);
    chain_broadcast(b, members, me, c.count, c.segments, {buffer_id::input, 0},
                    {buffer_id::output, 0}, {});
    return status::ok();
}

status build_reduce(const call& c, int rank, schedule::builder& b) {
    auto members = chain_from_root(c.nranks, c.root);
    int me       = mod(rank - c.root, c.nranks);
    if (me != 0 && me + 1 < c.nranks) {
        b.need_scratch(c.count);
    }
    chain_reduce(b, members, me, c.count, c.segments, {buffer_id::input, 0},
                 {buffer_id::scratch, 0}, {buffer_id::output, 0}, {});
    return status::ok();
}

cost cost_allreduce(const cost_query& q) {
    double n = q.nranks;
    return {2 * (n - 1), 2 * (n - 1) / n, true, "Lu-CA §5.1"};
}

cost cost_one_phase(const cost_query& q) {
    double n = q.nranks;
    return {n - 1, (n - 1) / n, true, "Lu-CA §6"};
}

cost cost_chain(const cost_query& q) {
    if (q.nranks == 1) {
        return {0, 0, true, "one rank: a local copy"};
    }
    double steps = q.nranks + q.segments - 2.0;
    return {steps, steps / q.segments, true,
            "exact for P segments; asymptote (N-1)α + M/BW at P* (Lu-CA §3.1/§4.1, "
            "docs/references.md#pipelined-optimum)"};
}

const algorithm allreduce_ring{"ring",
                               collective::allreduce,
                               "reduce-scatter then all-gather around the ring (Patarasuk-Yuan)",
                               "2(N-1)α + 2(N-1)/N·M/BW",
                               "any N, any count",
                               any_call,
                               build_allreduce,
                               cost_allreduce};
const algorithm reduce_scatter_ring{"ring",
                                    collective::reduce_scatter,
                                    "N-1 steps, each rank forwards a growing partial sum",
                                    "(N-1)α + (N-1)/N·M/BW",
                                    "any N, any count",
                                    any_call,
                                    build_reduce_scatter,
                                    cost_one_phase};
const algorithm allgather_ring{"ring",
                               collective::allgather,
                               "N-1 steps, each rank forwards the block it received last",
                               "(N-1)α + (N-1)/N·M/BW",
                               "any N, any count",
                               any_call,
                               build_allgather,
                               cost_one_phase};
const algorithm broadcast_ring{"ring",
                               collective::broadcast,
                               "pipelined chain from the root in P segments",
                               "(N+P-2)(α + M/(P·BW))",
                               "any N, any root, P ≥ 1",
                               any_call,
                               build_broadcast,
                               cost_chain};
const algorithm reduce_ring{"ring",
                            collective::reduce,
                            "pipelined chain toward the root in P segments, reducing per hop",
                            "(N+P-2)(α + M/(P·BW))",
                            "any N, any root, P ≥ 1",
                            any_call,
                            build_reduce,
                            cost_chain};

}  // namespace

std::vector<const algorithm*> family_ring() {
    return {&broadcast_ring, &reduce_ring, &allreduce_ring, &reduce_scatter_ring, &allgather_ring};
}

}  // namespace loom::algorithms
