// SPDX-License-Identifier: Apache-2.0
// Recursive halving / doubling building blocks, shared by the recursive-doubling family
// (recursive_doubling.cc) and Rabenseifner all-reduce (rabenseifner.cc), so each exchange
// pattern exists once (docs/architecture.md#rule-algorithm-files): Rabenseifner =
// recursive_reduce_scatter ∘ recursive_allgather.
//
// Nomenclature (as ring_patterns.hh): `members[pos]` is the rank at position pos, `me` this
// rank's position, n = members.size(); a vector is cut into n "blocks" by a block_layout and
// position p ends with (reduce-scatter) or starts from (all-gather) block p. The "distance" d
// of a step is how far apart its partners are.
//
// Two exchange patterns:
//   butterfly     (n a power of two) partner me XOR d. Reduce-scatter halves the block range a
//                 position is responsible for, d = n/2, n/4, …, 1; all-gather doubles it,
//                 d = 1, 2, …, n/2. Every range is contiguous, so every message is one region.
//   dissemination (any n) send to me+d, receive from me-d (reduce-scatter, d = 2^(k-1) … 1)
//                 or send to me-d, receive from me+d (all-gather, d = 1 … 2^(k-1)), with
//                 k = ⌈log2 n⌉; the vector is kept in a scratch copy ROTATED by me (rotated
//                 position p holds block (me+p) mod n) so that every message is one region.
//                 Step d moves min(d, n-d) blocks, Σ = n-1 blocks.
// Both take ⌈log2 n⌉ steps and move (n-1) blocks per rank; each rank sends to one peer and
// receives from one peer per step.
#pragma once

#include <vector>

#include "ring_patterns.hh"

namespace loom::algorithms {

/// Butterfly reduce-scatter (n a power of two): position p ends with block p, reduced over all
/// members, in `final_dst`. Reads `in` (never written); partial sums go to `acc` at the same
/// offsets as in the vector (`acc` may be the output buffer).
phase_end halving_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                                 const block_layout& blocks, vector_at in, vector_at acc,
                                 schedule::region final_dst, phase_end after, uint32_t tag = 0);

/// Butterfly all-gather (n a power of two): position p holds block p in `own`; every block
/// ends in `dst` (own may already be dst's block p).
phase_end doubling_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                             const block_layout& blocks, schedule::region own, vector_at dst,
                             phase_end after, uint32_t tag = 0);

/// Dissemination reduce-scatter (any n): as halving_reduce_scatter; `rot` is a scratch vector
/// of blocks.total() elements holding the rotated partial sums (must not overlap final_dst).
phase_end dissemination_reduce_scatter(schedule::builder& b, const std::vector<int>& members,
                                       int me, const block_layout& blocks, vector_at in,
                                       vector_at rot, schedule::region final_dst, phase_end after,
                                       uint32_t tag = 0);

/// Dissemination all-gather (any n): as doubling_allgather; `rot` is a scratch vector of
/// blocks.total() elements holding the rotated gathered blocks until they are copied to dst.
phase_end dissemination_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                                  const block_layout& blocks, schedule::region own, vector_at rot,
                                  vector_at dst, phase_end after, uint32_t tag = 0);

/// The butterfly when n is a power of two, dissemination otherwise. `work` is the butterfly's
/// accumulator or the dissemination's rotated scratch (see uses_rotation()).
phase_end recursive_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                                   const block_layout& blocks, vector_at in, vector_at work,
                                   schedule::region final_dst, phase_end after, uint32_t tag = 0);
phase_end recursive_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                              const block_layout& blocks, schedule::region own, vector_at rot,
                              vector_at dst, phase_end after, uint32_t tag = 0);

/// True when n members use the dissemination pattern (n > 1 and not a power of two), which
/// needs a scratch vector that overlaps neither the final block nor the destination.
bool uses_rotation(int n);

}  // namespace loom::algorithms
