// SPDX-License-Identifier: Apache-2.0
// Per-dimension Rabenseifner on torus, ring and mesh shapes (Lu-TM App. A): `dims-rabenseifner`
// all-reduce, `dims-halving` reduce-scatter, `dims-doubling` all-gather.
//
// How it works
//   The phases, the line of each phase and the nested block ownership are `dims`'s
//   (torus_dims.cc, torus_groups.hh): reduce-scatter over the active dims 0, 1, …, k-1,
//   all-gather back over k-1, …, 0, so rank r ends the reduce-scatter with flat block r.
//   Inside a phase the line runs the butterfly of halving_doubling.hh instead of a ring:
//   partners at line distance d_i/2, d_i/4, …, 1 (reduce-scatter) and back (all-gather), each
//   step one message of δ blocks to the partner δ coordinates away. A message to a partner
//   that is not a neighbour is routed over the line's physical links (dimension-ordered,
//   the fabric's tie rule), cut-through.
//
// Cost (Lu-TM App. A counts a distance-δ exchange as one α; on the lattice it crosses δ
//   physical links, docs/references.md#dims-rabenseifner-hops)
//   α: a phase of d_i takes log2 d_i steps but Σδ = d_i - 1 hops, so a traversal costs
//     Σ(d_i - 1)α, the same as the ring per dim, not Σlog2 d_i (8x8x8 all-reduce: 42α, not
//     the text's 18).
//   BW: the step at distance δ moves δ blocks per rank, (d_i-1)/d_i of the piece per phase
//     as the ring does, but the δ messages that leave consecutive coordinates the same way
//     share the link between them: the busiest link carries s(δ) = δ of them (δ/2 on the
//     antipodal step δ = d_i/2 of a torus line d_i ≥ 4 under the source-parity tie rule, which
//     sends odd sources the other way).
//   Stated (lockstep, as algorithms::predict() counts a routed schedule: each step costs its
//   longest route in α and its busiest link's bytes), per traversal, with f_i = the piece of
//   phase i as a fraction of M (1 / the product of the dims before it):
//     Σ_i (d_i - 1)α + Σ_i f_i/d_i · Σ_δ s(δ)·δ · M/BW
//   4x4 torus all-reduce: 12α + 3.125·M/BW toward-plus, 12α + 1.875·M/BW source-parity
//   (`dims`: 12α + 1.875·M/BW); 8x8 toward-plus 28α + 5.90625·M/BW. A bound, not the simulator's
//   time: messages whose heads reach a link α apart do not queue, so once α·BW ≥ M/2 (the largest
//   message) the simulator meets the ring's 2Σ(d_i-1)α + 2(N-1)/N·M/BW exactly, and lies between
//   the two otherwise. Single-port = per-edge (physical links, algorithm.hh). So on a lattice the
//   butterfly never beats `dims`: the α the text saves is the hops a message still crosses.
//
// Constraints
//   torus:, ring: and mesh: shapes whose every dimension is a power of two (d_i = 1 and 2
//   included); any count. Other sizes: `dims` (Lu-TM App. A falls back to the ring there).
#include <limits>

#include "families.hh"
#include "halving_doubling.hh"
#include "topology/lines.hh"
#include "torus_groups.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

status applicable(const call& c) {
    if (!c.topo.is_lattice()) {
        return not_applicable("needs a torus, ring or mesh topology (got " + c.topo.to_string() +
                              ")");
    }
    for (int d : c.topo.dims()) {
        if (!is_pow2(d)) {
            return not_applicable("every dimension must be a power of two (got " +
                                  c.topo.to_string() + "); use dims");
        }
    }
    return status::ok();
}

using topology::active_dims;

// Butterfly reduce-scatter over the active dims in order: reads `in`, keeps partial sums in
// `work` (laid out like the vector), writes block `rank` to `last_dst`.
phase_end rs_phases(schedule::builder& b, const call& c, int rank, vector_at in, vector_at work,
                    region last_dst) {
    auto dims = active_dims(c.topo);
    phase_end at{};
    for (size_t k = 0; k < dims.size(); ++k) {
        int dim = dims[k], me = coord_of(c.topo, rank, dim);
        dim_group g = group_of(c.topo, rank, dim);
        auto lay    = nested_layout(c.count, c.nranks, g, c.topo.dims()[dim]);
        int64_t off = schedule::block_offset(c.count, c.nranks, g.first);
        vector_at src{k == 0 ? in.buf : work.buf, (k == 0 ? in.offset : work.offset) + off};
        vector_at acc{work.buf, work.offset + off};
        region fin = k + 1 == dims.size() ? last_dst : acc.block(lay, me);
        at = halving_reduce_scatter(b, topology::dim_line(c.topo, rank, dim), me, lay, src, acc,
                                    fin, at);
    }
    return at;
}

// Butterfly all-gather over the active dims in reverse order: block `rank` starts in `own`.
void ag_phases(schedule::builder& b, const call& c, int rank, region own, vector_at dst,
               phase_end at) {
    auto dims = active_dims(c.topo);
    for (size_t k = dims.size(); k-- > 0;) {
        int dim = dims[k], me = coord_of(c.topo, rank, dim);
        dim_group g = group_of(c.topo, rank, dim);
        auto lay    = nested_layout(c.count, c.nranks, g, c.topo.dims()[dim]);
        vector_at piece{dst.buf, dst.offset + schedule::block_offset(c.count, c.nranks, g.first)};
        region mine = k + 1 == dims.size() ? own : piece.block(lay, me);
        at = doubling_allgather(b, topology::dim_line(c.topo, rank, dim), me, lay, mine, piece, at);
    }
}

status build_allreduce(const call& c, int rank, schedule::builder& b) {
    if (c.nranks == 1) {
        b.local_copy(schedule::out(0, c.count), schedule::in(0, c.count));
        return status::ok();
    }
    region mine = schedule::out(schedule::block_offset(c.count, c.nranks, rank),
                                schedule::block_size(c.count, c.nranks, rank));
    auto rs     = rs_phases(b, c, rank, {buffer_id::input, 0}, {buffer_id::output, 0}, mine);
    ag_phases(b, c, rank, mine, {buffer_id::output, 0}, rs);
    return status::ok();
}

status build_reduce_scatter(const call& c, int rank, schedule::builder& b) {
    region mine = schedule::out(0, schedule::block_size(c.count, c.nranks, rank));
    if (c.nranks == 1) {
        b.local_copy(mine, schedule::in(0, c.count));
        return status::ok();
    }
    b.need_scratch(c.count);
    rs_phases(b, c, rank, {buffer_id::input, 0}, {buffer_id::scratch, 0}, mine);
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

// Messages that share the busiest link in the step at distance δ of a line of d.
double sharing(int d, int delta, bool wraps, tie_rule ties) {
    bool antipodal = wraps && d >= 4 && 2 * delta == d;
    return antipodal && ties == tie_rule::source_parity ? delta / 2.0 : delta;
}

// `Traversals` butterfly traversals over every active dim (all-reduce 2, the others 1).
template <int Traversals>
cost cost_lockstep(const cost_query& q) {
    double inf = std::numeric_limits<double>::infinity();
    if (!q.topo.is_lattice()) {
        return {inf, inf, false, "not applicable: needs a torus, ring or mesh"};
    }
    double hops = 0, beta = 0, piece = 1;
    for (int d : q.topo.dims()) {
        if (!is_pow2(d)) {
            return {inf, inf, false, "not applicable: every dimension must be a power of two"};
        }
        for (int delta = d / 2; delta >= 1; delta /= 2) {
            hops += delta;
            beta += sharing(d, delta, q.topo.wraps(), q.ties) * delta * piece / d;
        }
        piece /= d;
    }
    return {Traversals * hops, Traversals * beta, false,
            "bound: lockstep steps, a distance-δ exchange crosses δ links and δ messages share "
            "the busiest one (docs/references.md#dims-rabenseifner-hops); the simulator meets "
            "dims's form once α·BW ≥ M/2; single-port = per-edge (physical links)"};
}

constexpr std::string_view pow2_lattice = "torus, ring or mesh, every d_i a power of two";

const algorithm allreduce_dims_rabenseifner{
    "dims-rabenseifner",
    collective::allreduce,
    "butterfly reduce-scatter per dim (0..k-1), butterfly all-gather back; routed partners",
    "2Σ(d_i-1)α + 2Σ f_i/d_i·Σ_δ s(δ)δ·M/BW (bound)",
    pow2_lattice,
    applicable,
    build_allreduce,
    cost_lockstep<2>,
    /*topology_aware=*/true};
const algorithm reduce_scatter_dims_halving{
    "dims-halving",
    collective::reduce_scatter,
    "recursive-halving reduce-scatter per dim; rank r keeps flat block r",
    "Σ(d_i-1)α + Σ f_i/d_i·Σ_δ s(δ)δ·M/BW (bound)",
    pow2_lattice,
    applicable,
    build_reduce_scatter,
    cost_lockstep<1>,
    /*topology_aware=*/true};
const algorithm allgather_dims_doubling{"dims-doubling",
                                        collective::allgather,
                                        "recursive-doubling all-gather per dim, last dim first",
                                        "Σ(d_i-1)α + Σ f_i/d_i·Σ_δ s(δ)δ·M/BW (bound)",
                                        pow2_lattice,
                                        applicable,
                                        build_allgather,
                                        cost_lockstep<1>,
                                        /*topology_aware=*/true};

}  // namespace

std::vector<const algorithm*> family_dims_rabenseifner() {
    return {&allreduce_dims_rabenseifner, &reduce_scatter_dims_halving, &allgather_dims_doubling};
}

}  // namespace loom::algorithms
