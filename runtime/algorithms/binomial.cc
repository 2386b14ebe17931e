// SPDX-License-Identifier: Apache-2.0
// Binomial family: broadcast, reduce, and allreduce as reduce followed by broadcast.
//
// How it works
//   Ranks are relabelled relative to the root, v = (rank - root) mod N, and form a binomial
//   tree on N nodes; any N works, the tree is just cut off at N (no power-of-two padding).
//   broadcast (Lu-CA §3.2): in step k = 0, 1, … every v < 2^k that holds the vector sends it
//     to v + 2^k (if < N), so the holding set doubles. Parent of v: v minus its highest bit;
//     children: v + 2^k for every 2^k > v. N = 4: R0→R1, then R0→R2 and R1→R3.
//   reduce (Lu-CA §4.2): in step k every v whose lowest set bit is 2^k sends its partial sum
//     to v - 2^k, which adds it in. Parent: v with its lowest bit cleared; children:
//     v + 2^k for every 2^k below v's lowest bit. N = 4: R1→R0 and R3→R2, then R2→R0.
//     This is not the broadcast tree reversed (R3 hangs under R2 here, under R1 there):
//     Lu-CA §4.2 says "identical edges" but its own traces differ
//     (docs/references.md#binomial-shapes), and loom reproduces each trace as printed. Non-root
//     partial sums live in scratch.
//   allreduce "reduce-broadcast" (Lu-CA §2 identity, the §4.3 baseline): the reduce toward
//     rank 0, then the broadcast from rank 0, written with the same two helpers; a rank's
//     partial sums live in its output, which the broadcast overwrites afterwards.
//   Pipelining: with P segments (a "segment" is a 1/P piece of the vector; an "edge" is one
//     of a rank's tree links, in the order of the steps that use them), a rank moves segment
//     s on edge i after segment s-1 on edge i and after segment s on edge i-1. Segment s
//     therefore crosses step k of the tree in round s + k + 1: P = 1 is exactly the text's
//     step-by-step schedule (one transfer per rank per step), and for P > 1 a rank feeds
//     several edges in one round. In the allreduce the broadcast of segment s starts as
//     soon as the root has reduced segment s.
//
// Cost, L = ⌈log2 N⌉ (N = 1: nothing, 0; the verifier's counts equal these exactly when P
// divides the count; otherwise segments differ by one element)
//   broadcast, reduce, per-edge:  (L+P-1)(α + M/(P·BW))     P = 1: Lα + L·M/BW (Lu-CA §3.2, §4.2)
//     the App. C master formula with L = tree depth; it tends to Lα + M/BW as P grows, and
//     at the continuous P* = √((L-1)M/(αBW)) it is (L-1)α + M/BW + 2√((L-1)αM/BW): one α
//     below App. C's printed optimum (docs/references.md#pipelined-optimum;
//     docs/references.md#integer-segments: a real P is an integer).
//   broadcast, reduce, single-port:  (L+P-1)α + L·M/BW
//     the root sends to (receives from) its L children through one port, so every byte of
//     the vector crosses it L times whatever P is; no other rank is ever busier (the steps
//     it takes part in are a subset of the root's, plus one edge the other way). P = 1 equals
//     per-edge (docs/references.md#port-model: unaffected); pipelining buys nothing on the β side
//     under one port (C.5: the root needs L ports).
//   allreduce, per-edge:  (2L+P-1)(α + M/(P·BW))             P = 1: 2Lα + 2L·M/BW
//     the master formula with L' = 2L, because the phases overlap per segment; it tends to
//     2Lα + M/BW, not §4.3's 2Lα + 2M/BW, which assumes the phases run one after the
//     other (here reduce traffic flows up while broadcast traffic flows down, on opposite
//     directions of full-duplex links). At P* = √((2L-1)M/(αBW)) the exact value is
//     (2L-1)α + M/BW + 2√((2L-1)αM/BW) (docs/references.md#pipelined-optimum again).
//   allreduce, single-port:  (2L+P-1)α + (2L - S/P)·M/BW,  S = ⌊P²/4⌋ for P ≤ 2L+1, else
//     L(P-L). The root is the busiest port in every round: it receives from up to L
//     children while it already sends earlier segments to up to L children; S counts the
//     rounds' overlap of the two (Σ_{u=1}^{P-1} min(L, u, P-u)). P = 1: 2L; P → ∞: L.
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < P: empty segments still make their
//   round trip), any root (allreduce uses rank 0), P ≥ 1, any topology (the tree is
//   logical; on a torus or mesh its edges pay physical hops these forms do not model).
#include "families.hh"
#include "ring_patterns.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

// Tags: the allreduce's two phases use opposite directions of every pair anyway (reduce
// edges go toward smaller v, broadcast edges toward larger v); distinct tags keep the
// matching obvious to a reader of the printed schedule.
constexpr uint32_t reduce_tag    = 0;
constexpr uint32_t broadcast_tag = 1;

// One rank's view of a tree: absolute ranks, children in the order of the steps that
// reach them (so the i-th child is the i-th edge of the pipeline).
struct tree_links {
    int parent = -1;  // -1 at the root
    std::vector<int> children;
};

int to_rank(int64_t v, int root, int n) {
    return static_cast<int>((v + root) % n);
}

// Lu-CA §3.2: parent = v minus its highest bit; children v + 2^k for 2^k > v.
tree_links broadcast_tree(int rank, int root, int n) {
    int64_t v = mod(rank - root, n);
    tree_links t;
    int64_t step = 1;
    if (v > 0) {
        int64_t high = int64_t{1} << floor_log2(v);
        t.parent     = to_rank(v - high, root, n);
        step         = high << 1;
    }
    for (; v + step < n; step <<= 1) {
        t.children.push_back(to_rank(v + step, root, n));
    }
    return t;
}

// Lu-CA §4.2: parent = v with its lowest bit cleared; children v + 2^k for 2^k below it.
tree_links reduce_tree(int rank, int root, int n) {
    int64_t v = mod(rank - root, n);
    tree_links t;
    int64_t low = v > 0 ? (v & -v) : int64_t{n};  // the root's "lowest bit" is beyond N
    if (v > 0) {
        t.parent = to_rank(v - low, root, n);
    }
    for (int64_t step = 1; step < low && v + step < n; step <<= 1) {
        t.children.push_back(to_rank(v + step, root, n));
    }
    return t;
}

region segment(vector_at v, int64_t count, int segments, int s) {
    return {v.offset + segment_offset(count, segments, s), segment_size(count, segments, s), v.buf};
}

// Pipelined tree broadcast. The root sends from `src` (and copies it to `dst` when they
// differ); every other rank receives into `dst` and forwards from there. `after[s]`, when
// given, is the step that must finish before this rank touches segment s (the reduce phase
// of the allreduce).
void tree_broadcast(schedule::builder& b, const tree_links& t, int64_t count, int segments,
                    vector_at src, vector_at dst, const std::vector<step_id>& after, uint32_t tag) {
    bool root = t.parent < 0;
    if (root && !(src.all(count) == dst.all(count))) {
        b.local_copy(dst.all(count), src.all(count));
    }
    std::vector<step_id> last_to(t.children.size(), no_step);  // per edge: previous segment
    step_id prev_recv = no_step;
    for (int s = 0; s < segments; ++s) {
        step_id have = after.empty() ? no_step : after[s];
        if (!root) {
            have = prev_recv =
                b.recv(t.parent, segment(dst, count, segments, s), {prev_recv, have}, tag);
        }
        auto from = segment(root ? src : dst, count, segments, s);
        // Segment s waits for segment s on the previous edge and segment s-1 on this edge:
        // the edge order of P = 1, shifted by one round per segment.
        step_id prev_edge = no_step;
        for (size_t i = 0; i < t.children.size(); ++i) {
            prev_edge = last_to[i] =
                b.send(t.children[i], from, {have, prev_edge, last_to[i]}, tag);
        }
    }
}

// Pipelined tree reduce: each rank adds its children's partial sums of segment s into
// `acc` (the first one on top of its own `in`) and passes the sum to its parent; leaves
// send `in` directly. Returns, per segment, the step after which this rank is done with
// it: the root's last reduction (the segment is final in `acc`) or the send to the parent.
std::vector<step_id> tree_reduce(schedule::builder& b, const tree_links& t, int64_t count,
                                 int segments, vector_at in, vector_at acc, uint32_t tag) {
    if (t.parent < 0 && t.children.empty()) {  // N = 1
        return std::vector<step_id>(segments, b.local_copy(acc.all(count), in.all(count)));
    }
    std::vector<step_id> done(segments, no_step);
    std::vector<step_id> last_from(t.children.size(), no_step);  // per edge
    step_id last_send = no_step;
    for (int s = 0; s < segments; ++s) {
        auto mine = segment(in, count, segments, s), sum = segment(acc, count, segments, s);
        step_id got = no_step;
        for (size_t i = 0; i < t.children.size(); ++i) {
            got = last_from[i] =
                b.recv_reduce(t.children[i], sum, i == 0 ? mine : sum, {got, last_from[i]}, tag);
        }
        if (t.parent >= 0) {
            last_send = b.send(t.parent, t.children.empty() ? mine : sum, {got, last_send}, tag);
        }
        done[s] = t.parent >= 0 ? last_send : got;
    }
    return done;
}

status build_broadcast(const call& c, int rank, schedule::builder& b) {
    tree_broadcast(b, broadcast_tree(rank, c.root, c.nranks), c.count, c.segments,
                   {buffer_id::input, 0}, {buffer_id::output, 0}, {}, broadcast_tag);
    return status::ok();
}

status build_reduce(const call& c, int rank, schedule::builder& b) {
    auto tree = reduce_tree(rank, c.root, c.nranks);
    vector_at acc{buffer_id::output, 0};
    if (tree.parent >= 0) {
        acc = {buffer_id::scratch, 0};
        if (!tree.children.empty()) {
            b.need_scratch(c.count);
        }
    }
    tree_reduce(b, tree, c.count, c.segments, {buffer_id::input, 0}, acc, reduce_tag);
    return status::ok();
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    vector_at in{buffer_id::input, 0}, out{buffer_id::output, 0};
    auto done =
        tree_reduce(b, reduce_tree(rank, 0, c.nranks), c.count, c.segments, in, out, reduce_tag);
    tree_broadcast(b, broadcast_tree(rank, 0, c.nranks), c.count, c.segments, out, out, done,
                   broadcast_tag);
    return status::ok();
}

cost cost_tree(const cost_query& q) {
    if (q.nranks == 1) {
        return {0, 0, true, "one rank: a local copy"};
    }
    double l = ceil_log2(q.nranks), p = q.segments, rounds = l + p - 1;
    if (q.ports == port_model::single_port) {
        return {rounds, l, true,
                "single-port: the root's one port carries the vector to (from) its ⌈log2N⌉ "
                "children, so n_beta = ⌈log2N⌉ at any P (docs/references.md#port-model, Lu-CA App. "
                "C.5)"};
    }
    return {rounds, rounds / p, true,
            "per-edge, exact for P segments: (L+P-1)(α+M/(P·BW)), L = ⌈log2N⌉ (Lu-CA §3.2/§4.2, "
            "App. C); asymptote Lα + M/BW, exact optimum one α below App. C's "
            "(docs/references.md#pipelined-optimum)"};
}

cost cost_allreduce(const cost_query& q) {
    if (q.nranks == 1) {
        return {0, 0, true, "one rank: a local copy"};
    }
    double l = ceil_log2(q.nranks), p = q.segments, rounds = 2 * l + p - 1;
    if (q.ports == port_model::single_port) {
        double overlap = p <= 2 * l + 1
                             ? static_cast<double>((int64_t{q.segments} * q.segments) / 4)
                             : l * (p - l);
        return {rounds, 2 * l - overlap / p, true,
                "single-port: the root receives from and sends to its ⌈log2N⌉ children in "
                "overlapping rounds: 2L - S/P, S = ⌊P²/4⌋ (P ≤ 2L+1) or L(P-L) "
                "(docs/references.md#port-model)"};
    }
    return {rounds, rounds / p, true,
            "per-edge, exact: (2L+P-1)(α+M/(P·BW)), L = ⌈log2N⌉, phases overlapped per segment; "
            "asymptote 2Lα + M/BW (Lu-CA §4.3's 2M/BW is for back-to-back phases; "
            "docs/references.md#pipelined-optimum)"};
}

const algorithm broadcast_binomial{
    "binomial",
    collective::broadcast,
    "the holding set doubles every step; P segments stream down the tree",
    "(L+P-1)(α + M/(P·BW)), L = ⌈log2N⌉; single-port (L+P-1)α + L·M/BW",
    "any N, any root, any count, P ≥ 1",
    any_call,
    build_broadcast,
    cost_tree};
const algorithm reduce_binomial{
    "binomial",
    collective::reduce,
    "the contributor set halves every step; P segments stream up the tree, reduced per hop",
    "(L+P-1)(α + M/(P·BW)), L = ⌈log2N⌉; single-port (L+P-1)α + L·M/BW",
    "any N, any root, any count, P ≥ 1",
    any_call,
    build_reduce,
    cost_tree};
const algorithm allreduce_reduce_broadcast{
    "reduce-broadcast",
    collective::allreduce,
    "binomial reduce to rank 0, then binomial broadcast, overlapped per segment",
    "(2L+P-1)(α + M/(P·BW)), L = ⌈log2N⌉; single-port (2L+P-1)α + (2L-S/P)·M/BW",
    "any N, any count, P ≥ 1",
    any_call,
    build_allreduce,
    cost_allreduce};

}  // namespace

std::vector<const algorithm*> family_binomial() {
    return {&broadcast_binomial, &reduce_binomial, &allreduce_reduce_broadcast};
}

}  // namespace loom::algorithms
