// SPDX-License-Identifier: Apache-2.0
// Rabenseifner (recursive halving-doubling) all-reduce.
//
// How it works
//   A reduce-scatter then an all-gather (Lu-CA App. B.2, Ring-Tree "Recursive Halving-Doubling"),
//   composed from the two patterns of halving_doubling.hh
//   (docs/architecture.md#rule-algorithm-files), as the ring family composes ring_reduce_scatter ∘
//   ring_allgather: recursive_reduce_scatter leaves rank r with block r of the sum in its output,
//   recursive_allgather spreads the blocks in place. N = 2^k: the butterfly. The reduce-scatter
//   pairs at distance N/2, N/4, …, 1 and the lower rank of a pair keeps the lower half (Ring-Tree's
//   order); the all-gather runs the same partners in reverse (1, 2, …, N/2). Each rank ends the
//   reduce-scatter owning block r, every message is one contiguous range, and no scratch is needed
//   (partial sums accumulate in the output). docs/references.md#rabenseifner-order: Lu-CA B.2 pairs
//   at distance 1 first; with "lower rank keeps the lower half" that ends with rank r owning block
//   bitreverse(r), and its own trace then breaks that rule at step 2 (R1 keeps chunk 3, R3 chunk
//   2). Ring-Tree's order gives the collective.hh ownership (rank r, block r) with the same
//   per-step payloads M/2, M/4 | M/4, M/2 at N = 4, so the cost is unchanged. Other N
//   (docs/references.md#non-power-of-two: the texts give no construction, only "2 extra α hops plus
//   an asymmetric BW term"): both phases use the dissemination pattern (partners r ± 2^j mod N on a
//   scratch copy rotated by r). It takes 2⌈log2N⌉ = 2⌊log2N⌋ + 2 rounds, the same number as the
//   standard fold (hand the vector to a partner, run on 2^⌊log2N⌋ ranks, hand the result back), but
//   moves 2(N-1)/N·M instead of the fold's (2(N'-1)/N' + 2)·M, so loom does not fold here
//   (recursive-doubling all-reduce, which must move the whole vector, does: recursive_doubling.cc).
// Nomenclature: "block" = 1/N of the vector (collective.hh partition); "distance" = how far
// apart a step's partners are.
//
// Cost
//   2⌈log2N⌉·α + 2(N-1)/N·M/BW for every N             (Lu-CA B.2; N = 4: 4α + 1.5·M/BW)
// Single-port equals per-edge: in every round a rank sends to one peer and receives from one
// (the butterfly partner, or r+d and r-d in the dissemination). Exact when N divides the
// count (blocks one element apart otherwise).
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < N), any topology (partners are logical).
#include "families.hh"
#include "halving_doubling.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    int n = c.nranks;
    vector_at in{buffer_id::input, 0}, out{buffer_id::output, 0}, tmp{buffer_id::scratch, 0};
    // The butterfly accumulates in the output; the dissemination needs a rotated scratch copy
    // (it must not overlap the block the reduce-scatter finishes in).
    bool rotated = uses_rotation(n);
    if (rotated) {
        b.need_scratch(c.count);
    }
    auto members = identity_members(n);
    auto blocks  = block_layout::even(c.count, n);
    auto mine    = out.block(blocks, rank);
    auto rs = recursive_reduce_scatter(b, members, rank, blocks, in, rotated ? tmp : out, mine, {});
    recursive_allgather(b, members, rank, blocks, mine, tmp, out, rs);
    return status::ok();
}

cost cost_allreduce(const cost_query& q) {
    double n = q.nranks;
    return {2.0 * ceil_log2(q.nranks), 2 * (n - 1) / n, true,
            is_pow2(q.nranks) ? "Lu-CA B.2 (Ring-Tree partner order, "
                                "docs/references.md#rabenseifner-order); single-port = per-edge"
                              : "dissemination RS + AG for N ≠ 2^k "
                                "(docs/references.md#non-power-of-two); single-port = per-edge"};
}

const algorithm allreduce_rabenseifner{
    "rabenseifner",
    collective::allreduce,
    "recursive-halving reduce-scatter then recursive-doubling all-gather",
    "2⌈log2N⌉α + 2(N-1)/N·M/BW",
    "any N, any count",
    any_call,
    build_allreduce,
    cost_allreduce};

}  // namespace

std::vector<const algorithm*> family_rabenseifner() {
    return {&allreduce_rabenseifner};
}

}  // namespace loom::algorithms
