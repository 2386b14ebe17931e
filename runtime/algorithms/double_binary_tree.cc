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
//   The trees are complementary (every rank is interior in exactly one and a leaf in the
//   other, Hu-NCCL §II.C) and, from N = 4 on, edge-disjoint: no rank pair is an edge of both,
//   so under one link per pair every directed link carries one tree's half and the pipelined
//   floor is M/(2·BW) (docs/references.md#dbt-edge-disjoint).
//   - N ≥ 7, tree 0 is NCCL's in-order tree (ncclGetBtree): rank 0 is the root with the
//     single child 2^(⌈log2N⌉-1); a rank r > 0 whose lowest set bit is b has children r-b/2
//     and r+b/2 (or the largest r+b/2^j < N), so the odd ranks are the leaves and the even
//     ranks interior. Its complement has the odd ranks interior: for even N the mirror
//     image i ↔ N-1-i (NCCL's ncclGetDtree); for odd N NCCL's in-order tree on N+1 ranks
//     with its one-child root dropped and every label shifted down by one (NCCL's own odd-N
//     rule, tree 0 shifted by one rank, leaves a rank interior in both: N = 3, rank 0). Both
//     complements hang each even leaf next to its parent (ranks e and e±1), and so does tree
//     0: they share pairs (N = 4 under NCCL's rule: 1–2). Tree 1 is the complement with its
//     even leaves moved two places round the cycle of even ranks 0, 2, …: each leaf edge
//     then spans a distance other than 1, and tree 1's other edges join odd ranks, which
//     tree 0 never does. Same shape, same depth, no shared pair (checked N = 7..300, 1024,
//     4096 by the tests).
//   - N = 4, 5, 6: the move above has no room (rank 2 of NCCL's tree at N = 4 touches every
//     rank), so both trees come from a table found by exhaustive search: N = 4 is 0→{1,2},
//     1→3 and 2→{1,3}, 3→0.
//   - N = 2, 3: 2(N-1) tree edges do not fit in N(N-1)/2 pairs, so one pair is an edge of
//     both trees and its links carry M whatever P is: these N run unsegmented (P = 1), with
//     NCCL's tree and its complement (N = 2: 0→1 and 1→0, i.e. each rank reduces one half
//     and sends it back, the ring's 2α + M/BW). N = 1: a local copy.
//   - On a ring, torus or mesh the links are physical, one per neighbour pair, not one per
//     rank pair, so rank-pair disjointness buys nothing there and the relabelled leaves
//     would cross more hops (ring:8, 1 KiB: 18.1 µs against 14.1): a lattice keeps NCCL's
//     tree and its complement for every N, and algorithms::predict() routes them.
//   At N = 4 on a star neither Lu-CA's drawing (R0→{R1,R2}, R1→R3 and R3→{R0,R2}, R2→R1)
//   nor NCCL's mirror is used; all are complementary with depth 2
//   (docs/references.md#dbt-second-tree), so the per-edge P = 1 cost is the same.
// Nomenclature: a "half" is the share of the vector one tree carries; a "segment" is the
// 1/P pipeline piece of a half. A rank with two children in a tree lands the second child's
// segment in scratch and adds it locally, so both children can deliver in the same round.
//
// Cost (D = depth of the deeper tree = ⌈log2 N⌉ for every N ≥ 2: NCCL's tree has depth
//   ⌈log2N⌉ through rank 0 → 2^(⌈log2N⌉-1) → … → 1, its relabelled complements the same or,
//   for odd N, ⌈log2(N+1)⌉ - 1 ≤ D, the tables' deeper tree D; so the texts' ⌈log2N⌉ is the
//   real depth here for all N)
//   per-edge (Lu-CA §5.2), exact for P segments per half, and what the simulator reaches on
//   a star or full mesh with one link per ordered pair, since no two transfers of a round
//   share a link:
//     (2D + P - 1)·α + (2D + P - 1)/(2P) · M/BW        (N ≥ 4; N ≤ 3 at P = 1)
//     P = 1: 2⌈log2N⌉α + ⌈log2N⌉·M/BW, Lu-CA §5.2; N = 4: 4α + 2·M/BW. That is 2 and not
//     ring's 1.5 (docs/references.md#dbt-n4-vs-ring: Lu-CA's "coincidentally matches ring" is
//     wrong). P → ∞: the BW term tends to M/(2·BW), not the M/BW that Lu-CA §5.2 prints for
//     t_DBT,pipe(P*) ≈ 2⌈log2N⌉α + M/BW (docs/references.md#dbt-pipelined-floor: substituting the
//     per-segment payload M/(2P) into the App. C master formula gives M/(2BW)); the printed form is
//     kept only as the asymptotic note. Nor is DBT's coefficient "half of ring's"
//     (docs/references.md#dbt-half-ring): the headline 1 vs 2(N-1)/N is half only as N → ∞ (N = 2:
//     equal, N = 4: 1 vs 1.5), and at P = 1 it is ⌈log2N⌉ vs 2(N-1)/N.
//   single-port (docs/references.md#port-model: one full-duplex port per rank; the verifier charges
//   each round
//     the busiest rank's max(bytes in, bytes out)). A rank is interior in one tree (≤ 2
//     children, ≤ 1 parent) and a leaf in the other, and sends on a link are chained, so
//     per round it takes in and sends out at most four segments of M/(2P); at P = 1 its
//     reduce and broadcast rounds never overlap (also for odd N, whose tree 1 is one level
//     shallower), so at most two halves (M). Exact where the trees allow it:
//       N = 2:                     M/BW (each rank ships its half out and back: M in, M out)
//       N = 4, P ≤ 2:              (3/2 + 1/P)·M/BW: every rank is a root with two children
//                                  or a parent with one child in one tree and a leaf in the
//                                  other, so three halves cross each port (P = 1: 2.5 vs 2
//                                  per-edge). From P = 3 on that is the lockstep count and an
//                                  upper bound: an asynchronous run (the simulator) reaches
//                                  the floor 3/2 sooner.
//       N = 2^D ≥ 8, P = 1:        (2D - 1)·M/BW; every round carries M except the two
//                                  around the roots (rank 0 and N-1 exchange one half with
//                                  their single child)
//     Elsewhere the rounds in which a shallower or partial subtree idles depend on N's bits
//     (P = 1: 2D - 1.5 … 2D; N = 6 gives 5.5, N = 7 gives 6), so loom states bounds and
//     predict returns the upper one (exact = false):
//       P = 1:  2D - 2 ≤ n_beta ≤ 2D   (rounds 1..D-2 and D+3..2D each move two halves through
//               a rank of tree 0's perfect subtree on ranks 1..2^(D-1)-1; ≤ M per round)
//       P ≥ 2:  max(n_beta per-edge, 2) ≤ n_beta ≤ (2D + P - 1)·2/P   (N ≥ 5: a rank with
//               two children and a parent in one tree and a leaf in the other, rank 2 of
//               NCCL's tree or rank 1 of the tables', passes 2M through its port; ≤ four
//               segments per round). Both ends tend to 2·M/BW as P → ∞: the single-port
//               floor of docs/references.md#dbt-pipelined-floor, four times the per-edge floor
//               M/(2BW).
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < 2P), any P ≥ 1 (N ≤ 3 ignores it), any
//   topology (the trees are logical: on a torus or mesh the physical hops between tree
//   neighbours are the simulator's business, not these closed forms). Allreduce only; the
//   root is ignored.
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

// The trees of N = 4, 5, 6 as parent tables: the smallest N with two edge-disjoint
// complementary spanning trees of depth ⌈log2N⌉, found by exhaustive search (rank 2 of
// NCCL's tree at N = 4 is adjacent to every other rank, so no second tree can avoid it).
constexpr int small_tree_parent[3][2][6] = {
    {{-1, 0, 0, 1}, {3, 2, -1, 2}},               // N = 4: 0→{1,2}, 1→3 | 2→{1,3}, 3→0
    {{-1, 0, 0, 1, 1}, {3, 2, -1, 4, 2}},         // N = 5
    {{-1, 0, 0, 1, 1, 2}, {3, 5, 4, -1, 3, 4}}};  // N = 6

tree_node small_tree(int n, int which, int rank) {
    const int* parent = small_tree_parent[n - 4][which];
    tree_node t;
    t.parent = parent[rank];
    for (int r = 0; r < n; ++r) {
        if (parent[r] == rank) {
            t.add_child(r);
        }
    }
    return t;
}

// The second tree before its leaves are moved: odd ranks interior, even ranks leaves.
tree_node complementary_tree(int n, int rank) {
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

// The even rank `shift` places further round the cycle of even ranks 0, 2, …, 2⌈n/2⌉-2.
int shift_even(int n, int even_rank, int shift) {
    return 2 * mod(even_rank / 2 + shift, (n + 1) / 2);
}

// How far the second tree's leaves move: each even leaf takes the place of the even rank two
// places after it, so it hangs four ranks away from where the complementary tree puts it.
// Two places the other way is edge-disjoint as well, but under one port per rank it makes
// ports collide at N = 64 and the simulator leaves the lockstep (2D-1)·M/BW there.
constexpr int leaf_shift = -2;

// Tree `which` (0 or 1) of the double binary tree on n ranks, as seen from `rank`. On a
// lattice the links are the physical ones, not one per rank pair: there NCCL's pair, whose
// tree neighbours are mostly adjacent ranks, crosses fewer hops than the edge-disjoint pair.
tree_node dbt_tree(int n, int which, int rank, bool lattice) {
    if (which == 0 && (lattice || n < 4 || n > 6)) {
        return nccl_btree(n, rank);
    }
    if (lattice || n <= 3) {
        return complementary_tree(n, rank);
    }
    if (n <= 6) {
        return small_tree(n, which, rank);
    }
    // Every edge of tree 0 that joins an odd and an even rank joins neighbours (a leaf and
    // its parent, ranks r and r±1); the complementary tree's leaf edges do too and meet
    // tree 0's. Moving the even leaves two places round the cycle of even ranks puts every
    // leaf edge of tree 1 across a distance other than 1, and tree 1's other edges join odd
    // ranks, which tree 0 never does: the trees are edge-disjoint (checked for every N from
    // 7 to 300 and at 1024 and 4096). Relabelling leaves keeps tree 1's shape and depth.
    if (rank % 2 == 0) {
        tree_node t;
        t.parent = complementary_tree(n, shift_even(n, rank, -leaf_shift)).parent;
        return t;
    }
    auto base = complementary_tree(n, rank);
    tree_node t;
    t.parent = base.parent;
    for (int i = 0; i < base.nchildren; ++i) {
        int c = base.children[i];
        t.add_child(c % 2 == 0 ? shift_even(n, c, leaf_shift) : c);
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

// N = 2 and 3 have too few rank pairs for two edge-disjoint spanning trees (2(N-1) edges
// against N(N-1)/2), so one pair carries both halves, M, and pipelining cannot go below M/BW
// there; the segments would only race for that pair's links. They run unsegmented.
int effective_segments(int nranks, int segments) {
    return nranks <= 3 ? 1 : segments;
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    if (c.nranks == 1) {
        b.local_copy(schedule::out(0, c.count), schedule::in(0, c.count));
        return status::ok();
    }
    auto halves  = block_layout::even(c.count, 2);
    int segments = effective_segments(c.nranks, c.segments);
    for (int which = 0; which < 2; ++which) {
        auto t = dbt_tree(c.nranks, which, rank, c.topo.is_lattice());
        if (t.nchildren == 2) {
            b.need_scratch(c.count);
        }
        build_tree_half(b, t, halves.offset(which), halves.size(which), segments,
                        static_cast<uint32_t>(which));
    }
    return status::ok();
}

cost cost_per_edge(const cost_query& q) {
    double d = ceil_log2(q.nranks), p = effective_segments(q.nranks, q.segments);
    double steps = 2 * d + p - 1;
    if (q.nranks <= 3) {
        return {steps, steps / 2, true,
                "per-edge, exact: N ≤ 3 has no two edge-disjoint spanning trees, so it runs "
                "unsegmented, Lu-CA §5.2's 2⌈log2N⌉α + ⌈log2N⌉·M/BW "
                "(docs/references.md#dbt-edge-disjoint)"};
    }
    return {steps, steps / (2 * p), true,
            "per-edge, exact for P segments per half (D = ⌈log2N⌉) on edge-disjoint trees; P=1 "
            "is Lu-CA §5.2's 2⌈log2N⌉α + ⌈log2N⌉·M/BW; as P grows the BW term tends to "
            "M/(2BW), below Lu-CA's headline M/BW (docs/references.md#dbt-pipelined-floor, "
            "docs/references.md#dbt-edge-disjoint, docs/references.md#dbt-n4-vs-ring, "
            "docs/references.md#dbt-half-ring)"};
}

cost cost_single_port(const cost_query& q) {
    double d = ceil_log2(q.nranks), p = effective_segments(q.nranks, q.segments);
    double steps = 2 * d + p - 1;
    if (q.nranks == 2) {
        return {steps, 1, true, "single-port, exact at N=2: each rank's half goes out and back"};
    }
    if (q.nranks == 4) {
        // Lockstep, every P; an asynchronous run reaches the 3/2 floor sooner from P = 3 on.
        return {steps, 1.5 + 1 / p, p <= 2,
                "single-port at N=4: (3/2 + 1/P)·M/BW, exact for P ≤ 2, an upper bound above "
                "(floor 3/2: each rank is a root with two children or a parent with one child "
                "in one tree and a leaf in the other, so three halves cross every port; P=1: "
                "2.5 vs 2 per-edge, docs/references.md#port-model)"};
    }
    if (p == 1 && is_pow2(q.nranks)) {
        return {steps, 2 * d - 1, true,
                "single-port, exact for N = 2^D ≥ 8 at P=1: (2D-1)·M/BW "
                "(docs/references.md#port-model)"};
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
    "two complementary, edge-disjoint binary trees, each reducing then broadcasting half the "
    "vector in P segments",
    "(2D+P-1)α + (2D+P-1)/(2P)·M/BW, D = ⌈log2N⌉ (P=1: 2⌈log2N⌉α + ⌈log2N⌉·M/BW)",
    "any N, any count, P ≥ 1 (N ≤ 3 runs unsegmented)",
    any_call,
    build_allreduce,
    cost_allreduce};

}  // namespace

std::vector<const algorithm*> family_double_binary_tree() {
    return {&allreduce_dbt};
}

}  // namespace loom::algorithms
