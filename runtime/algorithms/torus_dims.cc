// SPDX-License-Identifier: Apache-2.0
// Dimension-decomposed family `dims` on torus, ring and mesh shapes (Lu-TM §3, §4.2): every
// collective runs as one phase per dimension, each phase on that dimension's lines only.
// All-to-all lives in torus_dims_alltoall.cc.
//
// How it works
//   Ranks are row-major coordinates (topology.hh: the last dimension varies fastest). The
//   "line" of rank r along dim i is the d_i ranks that differ from r in coordinate i only;
//   on a torus it closes into a ring, on a mesh it is an open line. Dims with d_i = 1 are
//   skipped; a d_i = 2 torus line is a single link (its ring wraps onto itself).
//   broadcast: a spanning tree of neighbour links, phase by phase in dim order 0, 1, ...:
//     the source of a line (the rank that holds the vector when the phase starts) sends it
//     both ways round the ring (both halves both ways), so the far end of a torus line is
//     ⌊d_i/2⌋ hops away; on a mesh the line runs from the source's coordinate to both ends.
//     The vector is cut into P segments; every rank forwards segment s to all its children
//     the round after it arrives, so phases overlap and the whole tree pipelines.
//   reduce: the same tree reversed (Lu-TM §3.3: the last dim collapses first). A rank adds
//     its children's segments (the first child's with recv_reduce, the others' through one
//     segment-sized scratch slot each and a local_reduce) and passes the sum to its parent.
//   dims-one-way broadcast / reduce (torus and ring only): the same phases and pipelining,
//     but the source of a line sends one way (+) round the ring, so the line is a chain of
//     d_i-1 hops from the source; Lu-TM §3.2/§3.3's unidirectional per-dim ring BC/Reduce,
//     which the both-ways `dims` tree beats in α (⌊d_i/2⌋ against d_i-1 per dim) at the
//     same bytes. A mesh line has no wrap to go round, so it is not applicable there.
//   reduce_scatter: ring (torus, ring_patterns.hh) or open-line (mesh, below) reduce-scatter
//     over dims 0, 1, ..., k-1; allgather: the mirror over dims k-1, ..., 0; allreduce: both.
//   Ownership (docs/references.md#dims-ownership leaves it implementation-defined beyond 2x2x2):
//   rank r ends with
//     exactly block r of collective.hh's flat partition, for any count. With row-major
//     ranks the ranks that share coordinates c_0..c_{i-1} with r form a contiguous range
//     (r's level-i group), so their blocks form one contiguous piece of the vector. Phase i
//     cuts r's level-i piece into d_i sub-pieces at the flat block boundaries (a
//     block_layout) and line position j keeps sub-piece j, i.e. coordinate j keeps the
//     group of blocks whose ranks have c_i = j. On 2x2x2 this is Lu-TM §3.4's trace exactly
//     (coordinate 0 keeps the lower half in every phase; a=0 keeps Σ0, b=4 keeps Σ4).
//   Open-line reduce-scatter ("bucket brigade", Lu-TM §4.2), positions 0..n-1: position p
//     keeps block p. Block b's partial sums flow in from both ends, timed to meet at b in
//     the last step: p sends block b > p rightward at step p + n - b and block b < p
//     leftward at step n - p + b (each the sum of its own part and what arrived one step
//     earlier). Every link carries one block per direction per step, so n-1 steps and the
//     ring's bytes; an interior position lands its second final contribution in scratch
//     and adds it locally. Open-line all-gather is the time-reverse.
//
// Cost (per-edge; single-port is the same: on a torus or mesh the links are the physical
// ones either way, algorithm.hh — the verifier's port_bytes, which lumps a rank's links
// into one port, is therefore not the lattice's cost)
//   allreduce        2Σ(d_i-1)α + 2(N-1)/N·M/BW                 (Lu-TM §3.4, §4.2)
//   reduce_scatter   Σ(d_i-1)α + (N-1)/N·M/BW                   (Lu-TM §3.5)
//   allgather        Σ(d_i-1)α + (N-1)/N·M/BW
//     exact when N divides the count (the block telescoping 1 - 1/N of Lu-TM §3.4). Known
//     numbers: 8x8x8 allreduce 42α; 2x2x2 3α per traversal against the flat ring's 7.
//     Mesh: the same Σ(d_i-1) as the torus (docs/references.md#mesh-alpha: not Lu-TM §1.3's "2x per
//     dim"). Mesh all-gather: (N-1)/N as on the torus, also once a phase other than the
//     last has d_i ≥ 5 (docs/references.md#mesh-allgather-phases). No open-line all-gather of
//     d-1 steps keeps positions 2..d-3 busy in its last step, so their lines finish after
//     ⌊d/2⌋+1 steps and start the next phase early. A global lockstep count (the verifier's
//     rounds) then charges a round the larger block of the next phase and comes out above
//     (N-1)/N (mesh 3x5: 14/15 against 6/5 for all-gather). Nothing in the schedule waits for
//     a round: each line's steps wait only for their own data, the early lines' larger
//     blocks cross links the late lines do not use, and the run (fabric/sim) takes
//     Σ(d_i-1)α + (N-1)/N·M/BW exactly. The stated form is that time.
//   broadcast/reduce (D+P-1)(α + M/(P·BW)), exact for P segments dividing the count, with
//     D the tree depth: Σ⌊d_i/2⌋ on a torus (any root), Σ max(s_i, d_i-1-s_i) on a mesh
//     with the root at coordinates s (Σ(d_i-1) from a corner, Lu-TM §4.2's worst case).
//     Lu-TM §3.2/§3.3 print the asymptote Dα + M/BW (P → ∞; the optimum-P correction is as
//     in docs/references.md#pipelined-optimum). P = 1 gives Dα + D·M/BW.
//     dims-one-way: the same form with D = Σ(d_i-1) from any root (Lu-TM §3.2/§3.3's
//     "Σ(d_i-1)α + M/BW (unidirectional)", again the P → ∞ asymptote).
//
// Constraints
//   torus:, ring: and mesh: shapes of any dims (including d_i = 1 and 2), any count, any
//   root, P ≥ 1. Not on star or full mesh: there every pair is one hop apart and the
//   decomposition buys nothing (Lu-TM §2); use the flat algorithms.
#include <algorithm>
#include <limits>

#include "families.hh"
#include "ring_patterns.hh"
#include "topology/lines.hh"
#include "torus_groups.hh"
#include "util.hh"

namespace loom::algorithms {

// Shared with torus_dims_alltoall.cc: the two files are one family.
status torus_dims_applicable(const call& c);
cost torus_dims_not_applicable(const topology::shape& t);
const algorithm* torus_dims_alltoall();

status torus_dims_applicable(const call& c) {
    if (!c.topo.is_lattice()) {
        return not_applicable("needs a torus, ring or mesh topology (got " + c.topo.to_string() +
                              ")");
    }
    return status::ok();
}

cost torus_dims_not_applicable(const topology::shape& t) {
    double inf = std::numeric_limits<double>::infinity();
    return {inf, inf, false,
            "not applicable: needs a torus, ring or mesh (got " + t.to_string() + ")"};
}

namespace {

// The last steps of a phase: everything the next phase must wait for. A ring phase fills
// two (phase_end); an open-line phase up to four (two directions, sends and receives).
struct ends {
    step_id id[4] = {no_step, no_step, no_step, no_step};
};
ends from_ring(phase_end e) {
    return {{e.last_send, e.last_recv, no_step, no_step}};
}
// Only ring phases follow ring phases (a shape is all torus or all mesh), so id[2..3] are
// empty here.
phase_end to_ring(const ends& e) {
    return {e.id[0], e.id[1]};
}

using topology::active_dims;

}  // namespace

int coord_of(const topology::shape& t, int rank, int dim) {
    return rank / topology::dim_stride(t, dim) % t.dims()[dim];
}

dim_group group_of(const topology::shape& t, int rank, int dim) {
    int size = topology::dim_stride(t, dim) * t.dims()[dim];
    return {rank - rank % size, size};
}

block_layout nested_layout(int64_t count, int nranks, dim_group g, int d) {
    block_layout l;
    l.bounds.resize(d + 1);
    int64_t start = schedule::block_offset(count, nranks, g.first);
    for (int b = 0; b <= d; ++b) {
        l.bounds[b] = schedule::block_offset(count, nranks, g.first + b * (g.size / d)) - start;
    }
    return l;
}

namespace {

// Dependencies of a step: `own`, plus the phase start when it opens a chain.
std::vector<step_id> deps_of(std::initializer_list<step_id> own, step_id chain, const ends& after) {
    std::vector<step_id> v(own);
    v.push_back(chain);
    if (chain == no_step) {
        v.insert(v.end(), std::begin(after.id), std::end(after.id));
    }
    return v;
}

ends line_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int p,
                         const block_layout& blocks, vector_at in, vector_at acc, region final_dst,
                         region tmp, ends after) {
    int n     = static_cast<int>(members.size());
    int right = p + 1 < n ? members[p + 1] : -1, left = p > 0 ? members[p - 1] : -1;
    tmp.count  = final_dst.count;
    step_id rs = no_step, ls = no_step, from_left = no_step, from_right = no_step;
    step_id left_final = no_step, right_final = no_step;
    for (int t = 1; t < n; ++t) {
        if (right >= 0 && t >= p + 1) {  // block p+n-t, its sum over 0..p
            int blk  = p + n - t;
            auto src = p == 0 ? in.block(blocks, blk) : acc.block(blocks, blk);
            rs       = b.send(right, src, deps_of({from_left}, rs, after));
        }
        if (left >= 0 && t >= n - p) {  // block p+t-n, its sum over p..n-1
            int blk  = p + t - n;
            auto src = p == n - 1 ? in.block(blocks, blk) : acc.block(blocks, blk);
            ls       = b.send(left, src, deps_of({from_right}, ls, after));
        }
        if (left >= 0 && t >= p) {
            int blk  = p - 1 + n - t;
            auto dst = blk == p ? final_dst : acc.block(blocks, blk);
            from_left =
                b.recv_reduce(left, dst, in.block(blocks, blk), deps_of({}, from_left, after));
            left_final = blk == p ? from_left : no_step;
        }
        if (right >= 0 && t >= n - p - 1) {
            int blk = t - n + p + 1;
            if (blk == p && left_final != no_step) {
                // Both ends' sums arrive now: land the second and add it locally, so the
                // two receives stay in the same round.
                right_final = b.recv(right, tmp, deps_of({}, from_right, after));
                from_right  = right_final;
            } else {
                auto dst   = blk == p ? final_dst : acc.block(blocks, blk);
                from_right = b.recv_reduce(right, dst, in.block(blocks, blk),
                                           deps_of({}, from_right, after));
            }
        }
    }
    if (right_final != no_step) {
        step_id join = b.local_reduce(final_dst, final_dst, tmp, {left_final, right_final, rs, ls});
        return {{join, no_step, no_step, no_step}};
    }
    return {{rs, ls, from_left, from_right}};
}

ends line_allgather(schedule::builder& b, const std::vector<int>& members, int p,
                    const block_layout& blocks, region own, vector_at dst, ends after) {
    int n     = static_cast<int>(members.size());
    int right = p + 1 < n ? members[p + 1] : -1, left = p > 0 ? members[p - 1] : -1;
    step_id cp = no_step;
    if (!(own == dst.block(blocks, p))) {
        cp = b.local_copy(dst.block(blocks, p), own,
                          std::vector<step_id>(std::begin(after.id), std::end(after.id)));
    }
    step_id rs = no_step, ls = no_step, from_left = no_step, from_right = no_step;
    for (int t = 1; t < n; ++t) {
        // Block b spreads from position b: leftward it leaves p at step b-p+1, rightward
        // at step p-b+1, each the step after it arrived.
        if (left >= 0 && p + t - 1 <= n - 1) {
            int blk  = p + t - 1;
            auto src = blk == p ? own : dst.block(blocks, blk);
            ls       = b.send(left, src, deps_of({from_right}, ls, after));
        }
        if (right >= 0 && p + 1 - t >= 0) {
            int blk  = p + 1 - t;
            auto src = blk == p ? own : dst.block(blocks, blk);
            rs       = b.send(right, src, deps_of({from_left}, rs, after));
        }
        if (right >= 0 && p + t <= n - 1) {
            from_right = b.recv(right, dst.block(blocks, p + t), deps_of({cp}, from_right, after));
        }
        if (left >= 0 && p - t >= 0) {
            from_left = b.recv(left, dst.block(blocks, p - t), deps_of({cp}, from_left, after));
        }
    }
    return {{rs, ls, from_left, from_right}};
}

// Scratch for an open-line phase's second final contribution: the largest block r keeps.
int64_t line_tmp_size(const call& c, int rank) {
    int64_t most = 0;
    for (int dim : active_dims(c.topo)) {
        dim_group g = group_of(c.topo, rank, dim);
        auto lay    = nested_layout(c.count, c.nranks, g, c.topo.dims()[dim]);
        most        = std::max(most, lay.size(coord_of(c.topo, rank, dim)));
    }
    return most;
}

// Reduce-scatter over the active dims in order. Reads the vector from `in`, keeps partial
// sums in `work` (laid out like the vector), writes block `rank` to `last_dst`.
ends rs_phases(schedule::builder& b, const call& c, int rank, vector_at in, vector_at work,
               region last_dst, region tmp) {
    auto dims = active_dims(c.topo);
    ends at{};
    for (size_t k = 0; k < dims.size(); ++k) {
        int dim = dims[k], me = coord_of(c.topo, rank, dim);
        dim_group g = group_of(c.topo, rank, dim);
        auto lay    = nested_layout(c.count, c.nranks, g, c.topo.dims()[dim]);
        int64_t off = schedule::block_offset(c.count, c.nranks, g.first);
        vector_at src{k == 0 ? in.buf : work.buf, (k == 0 ? in.offset : work.offset) + off};
        vector_at acc{work.buf, work.offset + off};
        region fin = k + 1 == dims.size() ? last_dst : acc.block(lay, me);
        auto line  = topology::dim_line(c.topo, rank, dim);
        if (c.topo.wraps()) {
            at = from_ring(ring_reduce_scatter(b, line, me, lay, src, acc, fin, to_ring(at)));
        } else {
            at = line_reduce_scatter(b, line, me, lay, src, acc, fin, tmp, at);
        }
    }
    return at;
}

// All-gather over the active dims in reverse order: block `rank` starts in `own`, the
// whole vector ends in `dst`.
ends ag_phases(schedule::builder& b, const call& c, int rank, region own, vector_at dst, ends at) {
    auto dims = active_dims(c.topo);
    for (size_t k = dims.size(); k-- > 0;) {
        int dim = dims[k], me = coord_of(c.topo, rank, dim);
        dim_group g = group_of(c.topo, rank, dim);
        auto lay    = nested_layout(c.count, c.nranks, g, c.topo.dims()[dim]);
        vector_at piece{dst.buf, dst.offset + schedule::block_offset(c.count, c.nranks, g.first)};
        region mine = k + 1 == dims.size() ? own : piece.block(lay, me);
        auto line   = topology::dim_line(c.topo, rank, dim);
        if (c.topo.wraps()) {
            at = from_ring(ring_allgather(b, line, me, lay, mine, piece, to_ring(at)));
        } else {
            at = line_allgather(b, line, me, lay, mine, piece, at);
        }
    }
    return at;
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    if (c.nranks == 1) {
        b.local_copy(schedule::out(0, c.count), schedule::in(0, c.count));
        return status::ok();
    }
    region tmp{0, 0, buffer_id::scratch};
    if (!c.topo.wraps()) {
        tmp.count = line_tmp_size(c, rank);
        b.need_scratch(tmp.count);
    }
    region mine = schedule::out(schedule::block_offset(c.count, c.nranks, rank),
                                schedule::block_size(c.count, c.nranks, rank));
    ends rs     = rs_phases(b, c, rank, {buffer_id::input, 0}, {buffer_id::output, 0}, mine, tmp);
    ag_phases(b, c, rank, mine, {buffer_id::output, 0}, rs);
    return status::ok();
}

status build_reduce_scatter(const call& c, int rank, schedule::builder& b) {
    region mine = schedule::out(0, schedule::block_size(c.count, c.nranks, rank));
    if (c.nranks == 1) {
        b.local_copy(mine, schedule::in(0, c.count));
        return status::ok();
    }
    region tmp{c.count, c.topo.wraps() ? 0 : line_tmp_size(c, rank), buffer_id::scratch};
    b.need_scratch(c.count + tmp.count);
    rs_phases(b, c, rank, {buffer_id::input, 0}, {buffer_id::scratch, 0}, mine, tmp);
    return status::ok();
}

status build_allgather(const call& c, int rank, schedule::builder& b) {
    region own = schedule::in(0, schedule::block_size(c.count, c.nranks, rank));
    if (c.nranks == 1) {
        b.local_copy(schedule::out(0, c.count), own);
        return status::ok();
    }
    ag_phases(b, c, rank, own, {buffer_id::output, 0}, {});
    return status::ok();
}

// ---- broadcast / reduce: the pipelined spanning tree ----

// Which way data leaves the source of a line: both ways (`dims`), or only toward + round the
// ring (`dims-one-way`, Lu-TM §3.2/§3.3's unidirectional per-dim ring, torus only).
enum class fan { both_ways, one_way };

// The parent of coordinate x ≠ s on a line whose source sits at s: one hop nearer the
// source. On a torus offsets 1..⌊d/2⌋ hang off the + side, the rest off the - side; one way
// round, every coordinate hangs off its - neighbour.
int line_parent(fan f, int d, bool wraps, int s, int x) {
    if (f == fan::one_way) {
        return mod(x - 1, d);
    }
    if (!wraps) {
        return x > s ? x - 1 : x + 1;
    }
    return mod(x - s, d) <= d / 2 ? mod(x - 1, d) : mod(x + 1, d);
}

struct tree_links {
    int parent = -1;
    std::vector<int> children;
};

// Phases in dim order: rank r receives in the phase of the last dim where it differs from
// the root, then is the source of its line in every later dim.
tree_links tree_of(fan f, const topology::shape& t, int root, int rank) {
    auto cr = t.coords(root), c = t.coords(rank);
    int last = -1;
    for (int i = 0; i < t.ndims(); ++i) {
        last = c[i] != cr[i] ? i : last;
    }
    tree_links out;
    auto at = [&](int dim, int x) {
        auto cc = c;
        cc[dim] = x;
        return t.rank_of(cc);
    };
    for (int i = std::max(last, 0); i < t.ndims(); ++i) {
        int d = t.dims()[i], s = cr[i], x = c[i];
        if (i == last) {
            out.parent = at(i, line_parent(f, d, t.wraps(), s, x));
        }
        // Children: the line neighbours (+ side first) whose parent is x.
        for (int step : {1, -1}) {
            int y      = t.wraps() ? mod(x + step, d) : x + step;
            bool twice = t.wraps() && d == 2 && step < 0;  // a 2-ring's two sides are one link
            if (!twice && y >= 0 && y < d && y != s && line_parent(f, d, t.wraps(), s, y) == x) {
                out.children.push_back(at(i, y));
            }
        }
    }
    return out;
}

// Tree depth from the root: the rounds of an unpipelined broadcast.
int tree_depth(fan f, const topology::shape& t, int root) {
    auto cr   = t.coords(root);
    int depth = 0;
    for (int i = 0; i < t.ndims(); ++i) {
        int d = t.dims()[i];
        if (f == fan::one_way) {
            depth += d - 1;
        } else {
            depth += t.wraps() ? d / 2 : std::max(cr[i], d - 1 - cr[i]);
        }
    }
    return depth;
}

template <fan F>
status build_broadcast(const call& c, int rank, schedule::builder& b) {
    auto tree = tree_of(F, c.topo, c.root, rank);
    if (rank == c.root) {
        b.local_copy(schedule::out(0, c.count), schedule::in(0, c.count));
    }
    step_id got = no_step;
    std::vector<step_id> sent(tree.children.size(), no_step);
    for (int s = 0; s < c.segments; ++s) {
        int64_t off = segment_offset(c.count, c.segments, s);
        int64_t len = segment_size(c.count, c.segments, s);
        if (tree.parent >= 0) {
            got = b.recv(tree.parent, schedule::out(off, len), {got});
        }
        auto src = rank == c.root ? schedule::in(off, len) : schedule::out(off, len);
        for (size_t j = 0; j < tree.children.size(); ++j) {
            // Sends on one link go in order: each waits for the previous one.
            sent[j] = b.send(tree.children[j], src, {got, sent[j]});
        }
    }
    return status::ok();
}

template <fan F>
status build_reduce(const call& c, int rank, schedule::builder& b) {
    auto tree = tree_of(F, c.topo, c.root, rank);
    size_t m  = tree.children.size();
    if (m == 0 && tree.parent < 0) {
        b.local_copy(schedule::out(0, c.count), schedule::in(0, c.count));
        return status::ok();
    }
    // Partial sums in the output at the root, else in scratch; then one segment-sized slot
    // per child beyond the first.
    bool root         = tree.parent < 0;
    buffer_id acc_buf = root ? buffer_id::output : buffer_id::scratch;
    int64_t slot0 = root ? 0 : c.count, seg_max = segment_size(c.count, c.segments, 0);
    if (m > 0) {
        b.need_scratch(slot0 + static_cast<int64_t>(m - 1) * seg_max);
    }
    std::vector<step_id> got(m, no_step), used(m, no_step);
    step_id sent = no_step;
    for (int s = 0; s < c.segments; ++s) {
        int64_t off = segment_offset(c.count, c.segments, s);
        int64_t len = segment_size(c.count, c.segments, s);
        region in   = schedule::in(off, len), acc{off, len, acc_buf};
        step_id sum = no_step;
        for (size_t j = 0; j < m; ++j) {
            if (j == 0) {
                sum = got[0] = b.recv_reduce(tree.children[0], acc, in, {got[0]});
                continue;
            }
            region slot = schedule::tmp(slot0 + static_cast<int64_t>(j - 1) * seg_max, len);
            // The slot is reused per segment: wait until the previous sum has read it.
            got[j] = b.recv(tree.children[j], slot, {got[j], used[j]});
            sum = used[j] = b.local_reduce(acc, acc, slot, {sum, got[j]});
        }
        if (!root) {
            sent = b.send(tree.parent, m == 0 ? in : acc, {sum, sent});
        }
    }
    return status::ok();
}

// ---- costs ----

template <fan F>
cost cost_tree(const cost_query& q) {
    if (!q.topo.is_lattice() || (F == fan::one_way && !q.topo.wraps())) {
        return torus_dims_not_applicable(q.topo);
    }
    int depth = tree_depth(F, q.topo, q.root);
    if (depth == 0) {
        return {0, 0, true, "one rank: a local copy"};
    }
    double rounds = depth + q.segments - 1.0;
    return {rounds, rounds / q.segments, true,
            "tree depth D = " + std::to_string(depth) +
                "; exact for P segments dividing the count; Lu-TM §3.2/§3.3 print the P→∞ "
                "asymptote Dα + M/BW; single-port = per-edge (physical links)"};
}

// `Rs` reduce-scatter and `Ag` all-gather traversals (all-reduce is one of each).
template <int Rs, int Ag>
cost traversals(const cost_query& q) {
    if (!q.topo.is_lattice()) {
        return torus_dims_not_applicable(q.topo);
    }
    double hops = 0, n = q.nranks;
    for (int x : q.topo.dims()) {
        hops += x - 1;
    }
    std::string note =
        "Lu-TM §3.4/§3.5/§4.2; exact when N divides the count; single-port = "
        "per-edge (physical links)";
    if (Ag > 0 && !q.topo.wraps()) {
        note +=
            "; mesh all-gather: lines run asynchronously, (N-1)/N also where a lockstep count "
            "charges more (docs/references.md#mesh-allgather-phases)";
    }
    return {(Rs + Ag) * hops, (Rs + Ag) * (n - 1) / n, true, note};
}

constexpr std::string_view lattice_only = "torus, ring or mesh, any dims, any count";

const algorithm broadcast_dims{
    "dims",
    collective::broadcast,
    "per-dim phases in dim order, both ways round each line, pipelined in P segments",
    "(D+P-1)(α + M/(P·BW)), D = Σ⌊d_i/2⌋ torus, Σmax(s_i,d_i-1-s_i) mesh",
    "torus, ring or mesh, any root, P ≥ 1",
    torus_dims_applicable,
    build_broadcast<fan::both_ways>,
    cost_tree<fan::both_ways>,
    /*topology_aware=*/true};
const algorithm reduce_dims{
    "dims",
    collective::reduce,
    "the broadcast tree reversed: last dim first, sums pipelined in P segments",
    "(D+P-1)(α + M/(P·BW)), D = Σ⌊d_i/2⌋ torus, Σmax(s_i,d_i-1-s_i) mesh",
    "torus, ring or mesh, any root, P ≥ 1",
    torus_dims_applicable,
    build_reduce<fan::both_ways>,
    cost_tree<fan::both_ways>,
    /*topology_aware=*/true};
// One way round each ring: the texts' unidirectional per-dim form, D = Σ(d_i-1) from any root.
status one_way_applicable(const call& c) {
    if (!c.topo.is_lattice() || !c.topo.wraps()) {
        return not_applicable("needs a torus or ring topology, whose lines close (got " +
                              c.topo.to_string() + ")");
    }
    return status::ok();
}
const algorithm broadcast_dims_one_way{
    "dims-one-way",
    collective::broadcast,
    "per-dim phases in dim order, one way (+) round each ring, pipelined in P segments",
    "(D+P-1)(α + M/(P·BW)), D = Σ(d_i-1)",
    "torus or ring, any root, P ≥ 1",
    one_way_applicable,
    build_broadcast<fan::one_way>,
    cost_tree<fan::one_way>,
    /*topology_aware=*/true};
const algorithm reduce_dims_one_way{
    "dims-one-way",
    collective::reduce,
    "the one-way broadcast chain reversed: last dim first, sums pipelined in P segments",
    "(D+P-1)(α + M/(P·BW)), D = Σ(d_i-1)",
    "torus or ring, any root, P ≥ 1",
    one_way_applicable,
    build_reduce<fan::one_way>,
    cost_tree<fan::one_way>,
    /*topology_aware=*/true};
const algorithm allreduce_dims{
    "dims",
    collective::allreduce,
    "ring (torus) or open-line (mesh) reduce-scatter over dims 0..k-1, all-gather back",
    "2Σ(d_i-1)α + 2(N-1)/N·M/BW",
    lattice_only,
    torus_dims_applicable,
    build_allreduce,
    traversals<1, 1>,
    /*topology_aware=*/true};
const algorithm reduce_scatter_dims{
    "dims",
    collective::reduce_scatter,
    "ring or open-line reduce-scatter per dim; rank r keeps flat block r",
    "Σ(d_i-1)α + (N-1)/N·M/BW",
    lattice_only,
    torus_dims_applicable,
    build_reduce_scatter,
    traversals<1, 0>,
    /*topology_aware=*/true};
const algorithm allgather_dims{"dims",
                               collective::allgather,
                               "ring or open-line all-gather per dim, last dim first",
                               "Σ(d_i-1)α + (N-1)/N·M/BW",
                               lattice_only,
                               torus_dims_applicable,
                               build_allgather,
                               traversals<0, 1>,
                               /*topology_aware=*/true};

}  // namespace

std::vector<const algorithm*> family_torus_dims() {
    return {&broadcast_dims, &reduce_dims,          &allreduce_dims,         &reduce_scatter_dims,
            &allgather_dims, torus_dims_alltoall(), &broadcast_dims_one_way, &reduce_dims_one_way};
}

}  // namespace loom::algorithms
