// Ring and chain building blocks, shared by the flat ring family (ring.cc) and the
// dimension-decomposed torus family (torus_dims.cc), so the ring logic exists once (G3).
//
// `members[pos]` is the rank at ring position pos, `me` this rank's position. A vector of
// `count` elements at `base` is cut into members.size() blocks (collective.hh partition).
#pragma once

#include <vector>

#include "schedule/schedule.hh"

namespace loom::algorithms {

/// A buffer and an offset in it: where a vector starts.
struct vector_at {
    schedule::buffer_id buf;
    int64_t offset;
    schedule::region block(int64_t count, int n, int b) const {
        return {offset + schedule::block_offset(count, n, b), schedule::block_size(count, n, b),
                buf};
    }
    schedule::region all(int64_t count) const { return {offset, count, buf}; }
};

/// The last steps of a phase; the next phase depends on both (last_send frees the
/// buffers it read, last_recv produced the data).
struct phase_end {
    schedule::step_id last_send = schedule::no_step;
    schedule::step_id last_recv = schedule::no_step;
};

/// Ring reduce-scatter: position p ends with block p, reduced over all members, in
/// `final_dst`. Reads `in` (never written); partial sums of the other blocks go to `acc`.
/// Step t = 1..n-1: send block (p-t) mod n, receive block (p-t-1) mod n and reduce it.
phase_end ring_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                              int64_t count, vector_at in, vector_at acc,
                              schedule::region final_dst, phase_end after, uint32_t tag = 0);

/// Ring all-gather: position p holds block p in `own`; every block ends in `dst`.
/// Step t = 1..n-1: send block (p-t+1) mod n, receive block (p-t) mod n.
phase_end ring_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                         int64_t count, schedule::region own, vector_at dst, phase_end after,
                         uint32_t tag = 0);

/// Pipelined chain broadcast: members[0] holds the vector in `src`; it flows down the chain
/// in `segments` pieces and lands in `dst` on every member (members[0] copies src to dst
/// unless they are the same region).
phase_end chain_broadcast(schedule::builder& b, const std::vector<int>& members, int me,
                          int64_t count, int segments, vector_at src, vector_at dst,
                          phase_end after, uint32_t tag = 0);

/// Pipelined chain reduce toward members[0]: the last member sends its `in`, each other
/// member adds its `in` to what arrives (partials in `acc`) and passes it on; members[0]
/// writes the full reduction to `dst`.
phase_end chain_reduce(schedule::builder& b, const std::vector<int>& members, int me,
                       int64_t count, int segments, vector_at in, vector_at acc, vector_at dst,
                       phase_end after, uint32_t tag = 0);

}  // namespace loom::algorithms
