// SPDX-License-Identifier: Apache-2.0
// Recursive-doubling family: all-reduce (full-vector butterfly), all-gather (recursive
// doubling) and reduce-scatter (recursive halving).
//
// How it works
//   allreduce "recursive-doubling" (Lu-CA App. B.1): for N = 2^k, at the step with distance
//     d = 1, 2, …, N/2 every rank swaps its whole current vector with rank XOR d and adds the
//     partner's vector to its own. The running sum ping-pongs between the output and a
//     scratch vector (a receive cannot reduce into the region its own concurrent send still
//     reads), arranged so that the last step lands in the output.
//     Other N: the fold (docs/references.md#non-power-of-two: the texts give no consistent
//     construction). With N' = 2^⌊log2N⌋ and r = N - N', odd rank 2i+1 (i < r) hands its vector to
//     2i and drops out; the N' remaining ranks (2i for i < r, then r+… i.e. every rank ≥ 2r) run
//     the butterfly as virtual ranks 0..N'-1 (virtual v is rank 2v for v < r, v + r otherwise);
//     then 2i hands the result back to 2i+1.
//   allgather "recursive-doubling" / reduce_scatter "recursive-halving" (Lu-CA App. B.4):
//     for N = 2^k the butterfly of halving_doubling.hh: all-gather doubles the block range a
//     rank holds (distance 1, 2, …, N/2), reduce-scatter halves the range it reduces
//     (distance N/2, …, 2, 1, Ring-Tree's order: see rabenseifner.cc and
//     docs/references.md#rabenseifner-order), so rank r ends with block r and every message is one
//     contiguous range. Other N: the dissemination pattern of halving_doubling.hh
//     (docs/references.md#non-power-of-two): distances 1, 2, …, 2^(⌈log2N⌉-1) (reversed for
//     reduce-scatter), partners r ± d mod N, on a scratch copy rotated by r; step d moves min(d,
//     N-d) blocks, N-1 blocks in all. No fold is needed, and nothing is lost against N = 2^k.
// Nomenclature: "block" = the 1/N share of the vector (collective.hh partition); "distance"
// = how far apart a step's partners are; "survivor" / "folded" = the two ranks of a fold pair.
//
// Cost (M = the full vector; for allgather the gathered vector)
//   allreduce        N = 2^k:  log2N·α + log2N·M/BW                      (Lu-CA B.1; N=4: 2α+2M)
//                    other N:  (⌊log2N⌋+2)·α + (⌊log2N⌋+2)·M/BW          (fold; one round
//                              and one whole vector each way around the butterfly)
//   allgather,
//   reduce_scatter   any N:    ⌈log2N⌉·α + (N-1)/N·M/BW                  (Lu-CA B.4 for N=2^k;
//                              N=4: 2α + 0.75·M/BW)
// Single-port equals per-edge for all three: in every round a rank sends to at most one peer
// and receives from at most one (the butterfly swaps with one partner; dissemination sends to
// r+d and receives from r-d; a fold survivor starts the butterfly only after its folded
// partner's vector arrived and returns the result only after the butterfly). The forms are
// exact when N divides the count (blocks one element apart otherwise).
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < N), any topology (the partners are
//   logical; on a torus or mesh the simulator charges the physical hops).
#include "families.hh"
#include "halving_doubling.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

// Virtual rank v of the fold's core (N' = 2^⌊log2N⌋ ranks, r folded pairs) to real rank.
int fold_real(int v, int folded) {
    return v < folded ? 2 * v : v + folded;
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    int n     = c.nranks;
    region in = schedule::in(0, c.count), out = schedule::out(0, c.count);
    int k      = floor_log2(n);
    int core   = 1 << k;
    int folded = n - core;  // fold pairs (2i, 2i+1), i < folded
    if (n == 1) {
        b.local_copy(out, in);
        return status::ok();
    }
    if (rank < 2 * folded && rank % 2 == 1) {
        // Folded: the survivor reduces our vector into its own and returns the result.
        b.send(rank - 1, in);
        b.recv(rank - 1, out);
        return status::ok();
    }
    bool survivor = rank < 2 * folded;
    int vrank     = survivor ? rank / 2 : rank - folded;
    // Writes t = 1..writes alternate between out and tmp, the last one (t = writes) in out.
    int writes  = k + (survivor ? 1 : 0);
    auto target = [&](int t) { return (writes - t) % 2 == 0 ? out : schedule::tmp(0, c.count); };
    if (writes >= 2) {
        b.need_scratch(c.count);
    }
    region cur        = in;
    int t             = 0;
    step_id prev_send = no_step, prev_recv = no_step;
    if (survivor) {
        region dst = target(++t);
        prev_recv  = b.recv_reduce(rank + 1, dst, cur);
        cur        = dst;
    }
    for (int d = 1; d < core; d *= 2) {
        int partner = fold_real(vrank ^ d, folded);
        region dst  = target(++t);
        step_id s   = b.send(partner, cur, {prev_recv, prev_send});
        // dst was last read by the previous step's send (two writes ago it was `cur`).
        prev_recv = b.recv_reduce(partner, dst, cur, {prev_recv, prev_send});
        prev_send = s;
        cur       = dst;
    }
    if (survivor) {
        b.send(rank + 1, out, {prev_recv, prev_send});
    }
    return status::ok();
}

status build_allgather(const call& c, int rank, schedule::builder& b) {
    int n = c.nranks;
    if (uses_rotation(n)) {
        b.need_scratch(c.count);
    }
    recursive_allgather(b, identity_members(n), rank, block_layout::even(c.count, n),
                        schedule::in(0, schedule::block_size(c.count, n, rank)),
                        {buffer_id::scratch, 0}, {buffer_id::output, 0}, {});
    return status::ok();
}

status build_reduce_scatter(const call& c, int rank, schedule::builder& b) {
    int n = c.nranks;
    if (n > 1) {
        b.need_scratch(c.count);  // the butterfly's partial sums or the rotated copy
    }
    recursive_reduce_scatter(b, identity_members(n), rank, block_layout::even(c.count, n),
                             {buffer_id::input, 0}, {buffer_id::scratch, 0},
                             schedule::out(0, schedule::block_size(c.count, n, rank)), {});
    return status::ok();
}

cost cost_allreduce(const cost_query& q) {
    if (q.nranks == 1) {
        return {0, 0, true, "one rank: a local copy"};
    }
    double k = floor_log2(q.nranks);
    if (is_pow2(q.nranks)) {
        return {k, k, true, "Lu-CA B.1; single-port = per-edge (one partner per round)"};
    }
    return {k + 2, k + 2, true,
            "fold onto 2^⌊log2N⌋ ranks: one extra round and vector each way "
            "(docs/references.md#non-power-of-two); "
            "single-port = per-edge"};
}

cost cost_one_phase(const cost_query& q) {
    double n = q.nranks;
    return {static_cast<double>(ceil_log2(q.nranks)), (n - 1) / n, true,
            is_pow2(q.nranks)
                ? "Lu-CA B.4 butterfly; single-port = per-edge"
                : "dissemination with rotation for N ≠ 2^k (docs/references.md#non-power-of-two); "
                  "single-port = per-edge"};
}

const algorithm allreduce_recursive_doubling{
    "recursive-doubling",
    collective::allreduce,
    "butterfly: swap and add the whole vector with rank XOR 2^j; non-2^k N folded",
    "N=2^k: log2N·(α + M/BW); else (⌊log2N⌋+2)·(α + M/BW)",
    "any N (fold), any count",
    any_call,
    build_allreduce,
    cost_allreduce};
const algorithm allgather_recursive_doubling{
    "recursive-doubling",
    collective::allgather,
    "butterfly doubling the held blocks (N=2^k), dissemination r±2^j otherwise",
    "⌈log2N⌉α + (N-1)/N·M/BW",
    "any N, any count",
    any_call,
    build_allgather,
    cost_one_phase};
const algorithm reduce_scatter_recursive_halving{
    "recursive-halving",
    collective::reduce_scatter,
    "butterfly halving the reduced blocks (N=2^k), dissemination r±2^j otherwise",
    "⌈log2N⌉α + (N-1)/N·M/BW",
    "any N, any count",
    any_call,
    build_reduce_scatter,
    cost_one_phase};

}  // namespace

std::vector<const algorithm*> family_recursive_doubling() {
    return {&allreduce_recursive_doubling, &allgather_recursive_doubling,
            &reduce_scatter_recursive_halving};
}

}  // namespace loom::algorithms
