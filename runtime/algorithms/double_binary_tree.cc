// SPDX-License-Identifier: Apache-2.0
// Double binary tree family: allreduce "dbt" (Sanders-Speck-Träff; Lu-CA §5.2, Hu-NCCL §II.C).
//
// How it works
//   Two binary trees span the N ranks; tree 0 carries the first half of the vector, tree 1
//   the second (block_layout::even(count, 2); an odd count gives halves one element apart).
//   In each tree the half is reduced up to the root (each rank adds its children's partial
//   sums to its own input) and the result is broadcast back down. The trees run
//   concurrently, on their own tags, and each half is cut into P segments that stream
//   through the tree (P = 1 is the non-pipelined form): a rank forwards segment s as soon as
//   it has it, and sends on one link are chained so at most one segment is on a link at once.
//   Tree 0 is NCCL's in-order tree (ncclGetBtree): rank 0 is the root with the single child
//   2^(⌈log2N⌉-1); a rank r > 0 whose lowest set bit is b has children r-b/2 and r+b/2 (or
//   the largest r+b/2^j < N), so the odd ranks are the leaves and the even ranks interior.
//   Tree 1 must have the odd ranks as its interior:
//   - even N: the mirror image of tree 0, rank i ↔ N-1-i (NCCL's ncclGetDtree);
//   - odd N: NCCL's in-order tree on N+1 ranks with its one-child root dropped and every
//     label shifted down by one. NCCL's own odd-N rule (tree 0 shifted by one rank) cannot be
//     complementary: tree 0 on odd N has (N+1)/2 interior ranks but only (N-1)/2 leaves, so
//     any relabelling of it puts some rank (rank 0 under NCCL's shift, e.g. N = 3: 0→2→1 and
//     1→0→2) in the interior of both trees, contrary to Hu-NCCL §II.C's "no node is a non-leaf
//     in both trees". The dropped-root tree is a full binary tree on the odd ranks.
//   So for N ≥ 2 every rank is interior in exactly one tree and a leaf in the other, and no
//   rank is a leaf in both. N = 2: tree 0 is 0→1 and tree 1 is 1→0, i.e. each rank reduces
//   one half and sends it back (the same 2α + M/BW as the ring). N = 1: a local copy.
//   At N = 4 the trees are 0→2→{1,3} and 3→1→{2,0}, not Lu-CA's drawing (R0→{R1,R2}, R1→R3
//   and R3→{R0,R2}, R2→R1); both are complementary and have depth 2
//   (docs/references.md#dbt-second-tree), so the costs below are the same.
// Nomenclature: a "half" is the share of the vector one tree carries; a "segment" is the
// 1/P pipeline piece of a half. A rank with two children in a tree lands the second child's
// segment in scratch and adds it locally, so both children can deliver in the same round.
//
// Cost (D = depth of the deeper tree = ⌈log2 N⌉ for every N ≥ 2: tree 0 has depth ⌈log2N⌉
//   through rank 0 → 2^(⌈log2N⌉-1) → … → 1, the mirror has the same, the odd-N tree 1 has
//   depth ⌈log2(N+1)⌉ - 1 ≤ D; so the texts' ⌈log2N⌉ is the real depth here for all N)
//   per-edge (Lu-CA §5.2), exact for P segments per half:
//     (2D + P - 1)·α + (2D + P - 1)/(2P) · M/BW
//     P = 1: 2⌈log2N⌉α + ⌈log2N⌉·M/BW, Lu-CA §5.2; N = 4: 4α + 2·M/BW. That is 2 and not
//     ring's 1.5 (docs/references.md#dbt-n4-vs-ring: Lu-CA's "coincidentally matches ring" is
//     wrong). P → ∞: the BW term tends to M/(2·BW), not the M/BW that Lu-CA §5.2 prints for
//     t_DBT,pipe(P*) ≈ 2⌈log2N⌉α + M/BW (docs/references.md#dbt-pipelined-floor: substituting the
//     per-segment payload M/(2P) into the App. C master formula gives M/(2BW)); the printed form is
//     kept only as the asymptotic note. Nor is DBT's coefficient "half of ring's"
//     (docs/references.md#dbt-half-ring): the headline 1 vs 2(N-1)/N is half only as N → ∞ (N = 2:
//     equal, N = 4: 1 vs 1.5), and at P = 1 it is ⌈log2N⌉ vs 2(N-1)/N. Per-edge charges every
//     transfer its own link. Where a pair is an edge of both trees (N = 4: 1–2, the child in tree 0
//     is the parent in tree 1), the directed link carries tree 0's reduce and tree 1's broadcast;
//     at P = 1 they fall in different rounds, for P > 1 they share rounds, which a simulator with
//     one link per pair will charge twice.
//   single-port (docs/references.md#port-model: one full-duplex port per rank; the verifier charges
//   each round
//     the busiest rank's max(bytes in, bytes out)). A rank is interior in one tree (≤ 2
//     children, ≤ 1 parent) and a leaf in the other, and sends on a link are chained, so
//     per round it takes in and sends out at most four segments of M/(2P); at P = 1 its
//     reduce and broadcast rounds never overlap (also for odd N, whose tree 1 is one level
//     shallower), so at most two halves (M). Exact where the trees are perfect:
//       N = 2, any P:              M/BW (each rank ships its half out and back: M in, M out)
//       N = 2^D ≥ 4, P = 1:        (2D - 1)·M/BW; every round carries M except the two
//                                  around the roots (rank 0 and N-1 exchange one half with
//                                  their single child): N = 4 gives 3·M/BW vs 2 per-edge,
//                                  docs/references.md#port-model's number.
//     Elsewhere the rounds in which a shallower or partial subtree idles depend on N's bits
//     (P = 1: 2D - 1.5 … 2D; N = 6 gives 4.5, N = 7 gives 6), so loom states bounds and
//     predict returns the upper one (exact = false):
//       P = 1:  2D - 2 ≤ n_beta ≤ 2D   (rounds 1..D-2 and D+3..2D each move two halves through
//               a rank of tree 0's perfect subtree on ranks 1..2^(D-1)-1; ≤ M per round)
//       P ≥ 2:  max(n_beta per-edge, 2) ≤ n_beta ≤ (2D + P - 1)·2/P   (N ≥ 4: rank 2 has two
//               children and a parent in tree 0 and is a leaf in tree 1, so 2M crosses its
//               port; ≤ four segments per round). Both ends tend to 2·M/BW as P → ∞: the
//               single-port floor of docs/references.md#dbt-pipelined-floor, four times the
//               per-edge floor M/(2BW).
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < 2P), any P ≥ 1, any topology (the trees
//   are logical: on a torus or mesh the physical hops between tree neighbours are the
//   simulator's business, not these closed forms). Allreduce only; the root is ignored.
#include <array>

#include "families.hh"
#include "ring_patterns.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

// One rank's place in one tree: parent (-1 at the root) and up to two children.
struct tree_node {
    int parent = -1;
    std::array<int, 2> children{-1, -1};
    int nchildren = 0;

    void add_child(int c) {
        if (c >= 0) {
            children[nchildren++] = c;
        }
    }
};

// NCCL's ncclGetBtree: the in-order binary tree rooted at 0 (leaves are the odd ranks).
tree_node nccl_btree(int n, int rank) {
    tree_node t;
    int bit = 1;
    while (bit < n && (bit & rank) == 0) {
        bit <<= 1;
    }
    if (rank == 0) {
        t.add_child(n > 1 ? bit >> 1 : -1);
        return t;
    }
    int up   = (rank ^ bit) | (bit << 1);
    t.parent = up < n ? up : (rank ^ bit);
    int low  = bit >> 1;
    if (low == 0) {
        return t;
    }
    t.add_child(rank - low);  // always in range
    // The right child: the largest rank + low/2^j below n, if any.
    while (low > 0 && rank + low >= n) {
        low >>= 1;
    }
    t.add_child(low > 0 ? rank + low : -1);
    return t;
}

// Tree `which` (0 or 1) of the double binary tree on n ranks, as seen from `rank`.
tree_node dbt_tree(int n, int which, int rank) {
    if (which == 0) {
        return nccl_btree(n, rank);
    }
    tree_node t;
    if (n % 2 == 0) {
        // Mirror i ↔ n-1-i.
        auto m   = nccl_btree(n, n - 1 - rank);
        t.parent = m.parent < 0 ? -1 : n - 1 - m.parent;
        for (int i = 0; i < m.nchildren; ++i) {
            t.add_child(n - 1 - m.children[i]);
        }
        return t;
    }
    // Odd n: the in-order tree on n+1 ranks without its one-child root 0, labels minus one.
    auto m   = nccl_btree(n + 1, rank + 1);
    t.parent = m.parent <= 0 ? -1 : m.parent - 1;
    for (int i = 0; i < m.nchildren; ++i) {
        t.add_child(m.children[i] - 1);
    }
    return t;
}

// Reduce then broadcast one half [half_off, half_off + half_len) over one tree, in
// `segments` pieces, on its own tag. Partial sums live in the output buffer (the broadcast
// overwrites them once they have gone up); a second child's segment lands in scratch.
void build_tree_half(schedule::builder& b, const tree_node& t, int64_t half_off, int64_t half_len,
                     int segments, uint32_t tag) {
    std::vector<step_id> reduced(segments, no_step), up(segments, no_step);
    step_id prev_up = no_step;
    for (int s = 0; s < segments; ++s) {
        int64_t off = half_off + segment_offset(half_len, segments, s);
        int64_t len = segment_size(half_len, segments, s);
        region acc  = schedule::in(off, len);
        if (t.nchildren >= 1) {
            acc        = schedule::out(off, len);
            reduced[s] = b.recv_reduce(t.children[0], acc, schedule::in(off, len), {}, tag);
        }
        if (t.nchildren == 2) {
            step_id got = b.recv(t.children[1], schedule::tmp(off, len), {}, tag);
            reduced[s]  = b.local_reduce(acc, acc, schedule::tmp(off, len), {reduced[s], got});
        }
        if (t.parent >= 0) {
            // Sends on one link go in order: each waits for the previous one.
            prev_up = up[s] = b.send(t.parent, acc, {reduced[s], prev_up}, tag);
        }
    }
    std::array<step_id, 2> prev_down{no_step, no_step};
    for (int s = 0; s < segments; ++s) {
        int64_t off  = half_off + segment_offset(half_len, segments, s);
        region seg   = schedule::out(off, segment_size(half_len, segments, s));
        step_id have = reduced[s];
        if (t.parent >= 0) {
            // An interior rank's partial sum in `seg` must have gone up before it is replaced.
            have = b.recv(t.parent, seg, {t.nchildren > 0 ? up[s] : no_step}, tag);
        }
        for (int c = 0; c < t.nchildren; ++c) {
            prev_down[c] = b.send(t.children[c], seg, {have, prev_down[c]}, tag);
        }
    }
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    if (c.nranks == 1) {
        b.local_copy(schedule::out(0, c.count), schedule::in(0, c.count));
        return status::ok();
    }
    auto halves = block_layout::even(c.count, 2);
    for (int which = 0; which < 2; ++which) {
        auto t = dbt_tree(c.nranks, which, rank);
        if (t.nchildren == 2) {
            b.need_scratch(c.count);
        }
        build_tree_half(b, t, halves.offset(which), halves.size(which), c.segments,
                        static_cast<uint32_t>(which));
    }
    return status::ok();
}

cost cost_per_edge(const cost_query& q) {
    double d = ceil_log2(q.nranks), p = q.segments, steps = 2 * d + p - 1;
    return {steps, steps / (2 * p), true,
            "per-edge, exact for P segments per half (D = ⌈log2N⌉); P=1 is Lu-CA §5.2's "
            "2⌈log2N⌉α + ⌈log2N⌉·M/BW; as P grows the BW term tends to M/(2BW), below "
            "Lu-CA's headline M/BW (docs/references.md#dbt-pipelined-floor, "
            "docs/references.md#dbt-n4-vs-ring, docs/references.md#dbt-half-ring)"};
}

cost cost_single_port(const cost_query& q) {
    double d = ceil_log2(q.nranks), p = q.segments, steps = 2 * d + p - 1;
    if (q.nranks == 2) {
        return {steps, 1, true, "single-port, exact at N=2: each rank's half goes out and back"};
    }
    if (p == 1 && is_pow2(q.nranks)) {
        return {steps, 2 * d - 1, true,
                "single-port, exact for N = 2^D at P=1: (2D-1)·M/BW (N=4: 3 vs 2 per-edge, "
                "docs/references.md#port-model)"};
    }
    if (p == 1) {
        return {steps, 2 * d, false,
                "single-port upper bound 2D·M/BW; the count lies in [2D-2, 2D] "
                "(docs/references.md#port-model)"};
    }
    return {steps, steps * 2 / p, false,
            "single-port upper bound (2D+P-1)·2/P·M/BW (≤ four segments of M/(2P) per port "
            "per round); lower bound max(per-edge, 2); both tend to 2·M/BW "
            "(docs/references.md#dbt-pipelined-floor, docs/references.md#port-model)"};
}

cost cost_allreduce(const cost_query& q) {
    if (q.nranks == 1) {
        return {0, 0, true, "one rank: a local copy"};
    }
    return q.ports == port_model::single_port ? cost_single_port(q) : cost_per_edge(q);
}

const algorithm allreduce_dbt{
    "dbt",
    collective::allreduce,
    "two complementary binary trees (NCCL's), each reducing then broadcasting half the vector "
    "in P segments",
    "(2D+P-1)α + (2D+P-1)/(2P)·M/BW, D = ⌈log2N⌉ (P=1: 2⌈log2N⌉α + ⌈log2N⌉·M/BW)",
    "any N, any count, P ≥ 1",
    any_call,
    build_allreduce,
    cost_allreduce};

}  // namespace

std::vector<const algorithm*> family_double_binary_tree() {
    return {&allreduce_dbt};
}

}  // namespace loom::algorithms
