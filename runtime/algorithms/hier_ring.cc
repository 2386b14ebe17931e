// SPDX-License-Identifier: Apache-2.0
// Hierarchical (2-D) ring family: allreduce "hier-ring" (Ring-Tree, "2D Ring (Ring-Ring)").
//
// How it works
//   The ranks form K groups of G: the groups are the lines of the topology's last dimension,
//   so torus:KxG or mesh:KxG (rank = k·G + g, consecutive ranks in one group, as the ranks of
//   one host are) gives K groups of G, and a 1-D ring:N one group of N. Three phases, each a
//   ring of ring_patterns.hh:
//     1. intra-group reduce-scatter over the G members k·G + 0..G-1: member g ends with shard
//        g (block_layout::even(count, G)) reduced over its group, in scratch;
//     2. inter-group all-reduce of that shard over the K members 0..K-1·G + g: a ring
//        reduce-scatter of the shard cut into K blocks, then a ring all-gather, into the
//        output at the shard's place;
//     3. intra-group all-gather of the shards.
//   Only M/G crosses between groups per rank, the text's saving. With a 3-D or larger shape
//   the K = N/G groups still form one inter-group ring (routed by the fabric). On torus:KxG
//   the rings are the physical rows and columns: the same bytes and hops as the `dims`
//   all-reduce, in the text's order (inside the groups first).
// Nomenclature: a "group" is a line of the last dimension (G ranks), a "shard" the 1/G of
// the vector a group member owns after phase 1, a "block" the 1/K of a shard in phase 2.
//
// Cost (per-edge and single-port alike: every rank sends to one peer and receives from one
//   in each round; N = K·G)
//     (2(G-1) + 2(K-1))·α + (2(G-1)/G + 2(K-1)/(K·G))·M/BW  =  2(G+K-2)·α + 2(N-1)/N·M/BW
//   exact for counts N divides (the blocks are equal). Ring-Tree's phases with one α and one
//   BW: T1 = T3 = (G-1)α + (G-1)/G·M/BW, T2 = 2(K-1)α + 2(K-1)/K·(M/G)/BW. The BW term is the
//   flat ring's exactly and the α term 2(G+K-2) against 2(N-1), so with one link class it
//   never loses to the flat ring; the crossover the text computes needs two classes (inside
//   and between groups) and, where the G rings of phase 2 share one network port per group
//   (docs/references.md#hierarchical-ring), a phase-2 BW term G times larger:
//   hier_ring_crossover_bytes() in hier_ring.hh.
//   On a mesh a group's ring closes over its line (G-1 hops back) and a 3-D shape's
//   inter-group ring is routed, so algorithms::predict() routes the schedule there.
//
// Constraints
//   A ring, torus or mesh (the groups come from its last dimension); any count, any root
//   (ignored); P is not used.
#include <limits>

#include "families.hh"
#include "hier_ring.hh"
#include "ring_patterns.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

using schedule::buffer_id;

// This rank's group (a line of the last dimension) and its inter-group ring.
struct grouping {
    int group_size = 1;  // G
    int groups     = 1;  // K
    int k          = 0;  // which group
    int g          = 0;  // position inside it
    std::vector<int> intra, inter;
};

grouping group_of(const call& c, int rank) {
    grouping gr;
    gr.group_size = c.topo.dims().back();
    gr.groups     = c.nranks / gr.group_size;
    gr.k          = rank / gr.group_size;
    gr.g          = rank % gr.group_size;
    for (int i = 0; i < gr.group_size; ++i) {
        gr.intra.push_back(gr.k * gr.group_size + i);
    }
    for (int j = 0; j < gr.groups; ++j) {
        gr.inter.push_back(j * gr.group_size + gr.g);
    }
    return gr;
}

status hier_ring_applicable(const call& c) {
    if (!c.topo.is_lattice()) {
        return not_applicable(
            "needs a ring, torus or mesh: its groups are the lines of the last "
            "dimension (got " +
            c.topo.to_string() + ")");
    }
    return status::ok();
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    auto gr    = group_of(c, rank);
    auto outer = block_layout::even(c.count, gr.group_size);
    vector_at in{buffer_id::input, 0}, out{buffer_id::output, 0};
    int64_t shard_off = outer.offset(gr.g), shard = outer.size(gr.g);
    bool across = gr.groups > 1;
    if (across) {
        b.need_scratch(shard);
    }
    // Phase 1: the group-reduced shard, in scratch when phase 2 reads it.
    auto shard_dst = across ? schedule::tmp(0, shard) : out.block(outer, gr.g);
    phase_end end  = ring_reduce_scatter(b, gr.intra, gr.g, outer, in, out, shard_dst, {});
    if (across) {
        // Phase 2: the shard all-reduced across the groups, into its place in the output.
        auto inner = block_layout::even(shard, gr.groups);
        vector_at shard_in{buffer_id::scratch, 0}, shard_out{buffer_id::output, shard_off};
        auto mine = shard_out.block(inner, gr.k);
        auto rs   = ring_reduce_scatter(b, gr.inter, gr.k, inner, shard_in, shard_out, mine, end);
        end       = ring_allgather(b, gr.inter, gr.k, inner, mine, shard_out, rs);
    }
    // Phase 3: every shard to every member of the group.
    ring_allgather(b, gr.intra, gr.g, outer, out.block(outer, gr.g), out, end);
    return status::ok();
}

cost cost_allreduce(const cost_query& q) {
    if (!q.topo.is_lattice()) {
        double inf = std::numeric_limits<double>::infinity();
        return {inf, inf, false,
                "not applicable: needs a ring, torus or mesh (got " + q.topo.to_string() + ")"};
    }
    double g = q.topo.dims().back(), k = q.nranks / g;
    return {2 * (g - 1) + 2 * (k - 1), 2 * (g - 1) / g + 2 * (k - 1) / (k * g), true,
            "exact for counts N divides; G = last dimension, K = N/G; Ring-Tree's 2D ring with "
            "one link class (docs/references.md#hierarchical-ring)"};
}

const algorithm allreduce_hier_ring{
    "hier-ring",
    collective::allreduce,
    "2-D ring: reduce-scatter inside each group (a line of the last dimension), ring all-reduce "
    "of each shard across the groups, all-gather inside the groups",
    "2(G+K-2)α + 2(N-1)/N·M/BW, G = last dimension, K = N/G",
    "ring, torus or mesh (groups: lines of the last dimension), any count",
    hier_ring_applicable,
    build_allreduce,
    cost_allreduce};

}  // namespace

namespace {

// Each time is latency_s + per_byte_s·M.
struct linear_time {
    double latency_s  = 0;
    double per_byte_s = 0;
};

linear_time flat_ring_form(int groups, int group_size, const two_level_links& l) {
    double n = static_cast<double>(groups) * group_size;
    return {2 * (n - 1) * l.alpha_inter_s, 2 * (n - 1) / n / l.bw_inter_bytes_per_s};
}

linear_time hier_ring_form(int groups, int group_size, const two_level_links& l) {
    double g = group_size, k = groups, port = l.shared_port ? g : 1;
    return {2 * (g - 1) * l.alpha_intra_s + 2 * (k - 1) * l.alpha_inter_s,
            2 * (g - 1) / g / l.bw_intra_bytes_per_s +
                2 * (k - 1) / k / g * port / l.bw_inter_bytes_per_s};
}

}  // namespace

double flat_ring_time_s(int groups, int group_size, double bytes, const two_level_links& l) {
    auto t = flat_ring_form(groups, group_size, l);
    return t.latency_s + t.per_byte_s * bytes;
}

double hier_ring_time_s(int groups, int group_size, double bytes, const two_level_links& l) {
    auto t = hier_ring_form(groups, group_size, l);
    return t.latency_s + t.per_byte_s * bytes;
}

double hier_ring_crossover_bytes(int groups, int group_size, const two_level_links& l) {
    auto flat = flat_ring_form(groups, group_size, l);
    auto hier = hier_ring_form(groups, group_size, l);
    // The hierarchical ring is faster while M < Δlatency / Δper_byte.
    double saved_s = flat.latency_s - hier.latency_s;
    double extra_s = hier.per_byte_s - flat.per_byte_s;
    if (extra_s <= 0) {
        return saved_s >= 0 ? std::numeric_limits<double>::infinity() : 0;
    }
    return saved_s <= 0 ? 0 : saved_s / extra_s;
}

std::vector<const algorithm*> family_hier_ring() {
    return {&allreduce_hier_ring};
}

}  // namespace loom::algorithms
