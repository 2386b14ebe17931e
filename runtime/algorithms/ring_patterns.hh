// SPDX-License-Identifier: Apache-2.0
// Ring and chain building blocks, shared by the flat ring family (ring.cc) and the
// dimension-decomposed torus family (torus_dims.cc), so the ring logic exists once
// (docs/architecture.md#rule-algorithm-files).
//
// `members[pos]` is the rank at ring position pos, `me` this rank's position. A vector is
// cut into members.size() blocks by a block_layout: the even partition of collective.hh
// for flat rings, or the nested groups of a torus dimension (torus_dims.cc).
#pragma once

#include <vector>

#include "schedule/schedule.hh"

namespace loom::algorithms {

/// Block boundaries of a vector, relative to its start: block b is [bounds[b], bounds[b+1]).
/// A listed layout (non-empty `sizes`) has block b at [bounds[b], bounds[b] + sizes[b]), in
/// any order and with gaps between blocks: only the ring patterns take one, since they
/// address a block by offset and size alone (the halving/doubling ranges need neighbouring
/// blocks to touch).
struct block_layout {
    std::vector<int64_t> bounds;
    std::vector<int64_t> sizes;

    /// The collective.hh partition of `count` elements into n blocks.
    static block_layout even(int64_t count, int n);
    /// Block b = [offsets[b], offsets[b] + sizes[b]) of a vector of `total` elements.
    static block_layout listed(std::vector<int64_t> offsets, std::vector<int64_t> sizes,
                               int64_t total);
    int blocks() const { return static_cast<int>(bounds.size()) - 1; }
    int64_t offset(int b) const { return bounds[b]; }
    int64_t size(int b) const { return sizes.empty() ? bounds[b + 1] - bounds[b] : sizes[b]; }
    int64_t total() const { return bounds.back(); }
};

/// members[i] = i: the flat group 0..n-1.
std::vector<int> identity_members(int n);

/// A buffer and an offset in it: where a vector starts.
struct vector_at {
    schedule::buffer_id buf;
    int64_t offset;
    schedule::region block(const block_layout& l, int b) const {
        return {offset + l.offset(b), l.size(b), buf};
    }
    schedule::region all(int64_t count) const { return {offset, count, buf}; }
};

/// The last steps of a phase; the next phase depends on both (last_send frees the
/// buffers it read, last_recv produced the data).
struct phase_end {
    schedule::step_id last_send = schedule::no_step;
    schedule::step_id last_recv = schedule::no_step;
};

/// A local copy that waits for both ends of the phase before: how a phase with one member
/// (or a rotated scratch) takes its input.
schedule::step_id copy_after(schedule::builder& b, schedule::region dst, schedule::region src,
                             phase_end after);

/// The all-gathers' first move: this member's own block to its place `mine` in the
/// destination, after the phase before; no_step where it is there already.
schedule::step_id place_own(schedule::builder& b, schedule::region own, schedule::region mine,
                            phase_end after);

/// Ring reduce-scatter: position p ends with block p, reduced over all members, in
/// `final_dst`. Reads `in` (never written); partial sums of the other blocks go to `acc`.
/// Step t = 1..n-1: send block (p-t) mod n, receive block (p-t-1) mod n and reduce it.
phase_end ring_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                              const block_layout& blocks, vector_at in, vector_at acc,
                              schedule::region final_dst, phase_end after, uint32_t tag = 0);

/// Ring all-gather: position p holds block p in `own`; every block ends in `dst`.
/// Step t = 1..n-1: send block (p-t+1) mod n, receive block (p-t) mod n.
phase_end ring_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                         const block_layout& blocks, schedule::region own, vector_at dst,
                         phase_end after, uint32_t tag = 0);

/// Pipelined chain broadcast: members[0] holds the vector in `src`; it flows down the chain
/// in `segments` pieces and lands in `dst` on every member (members[0] copies src to dst
/// unless they are the same region).
phase_end chain_broadcast(schedule::builder& b, const std::vector<int>& members, int me,
                          int64_t count, int segments, vector_at src, vector_at dst,
                          phase_end after, uint32_t tag = 0);

/// Pipelined chain reduce toward members[0]: the last member sends its `in`, each other
/// member adds its `in` to what arrives (partials in `acc`) and passes it on; members[0]
/// writes the full reduction to `dst`.
phase_end chain_reduce(schedule::builder& b, const std::vector<int>& members, int me, int64_t count,
                       int segments, vector_at in, vector_at acc, vector_at dst, phase_end after,
                       uint32_t tag = 0);

}  // namespace loom::algorithms
