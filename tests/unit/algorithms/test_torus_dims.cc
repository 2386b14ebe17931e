// SPDX-License-Identifier: Apache-2.0
// Dimension-decomposed family `dims`: verified over the lattice sweep, counted
// rounds and bytes equal the stated closed forms on many shapes (including the all-to-all
// per-phase forms; the mesh all-gather's lockstep count beside its asynchronous form), the texts'
// known numbers (Lu-TM §3.1, §3.4: 8x8x8 all-reduce 42α; 2x2x2 3α per traversal against the flat
// ring's 7; §3.2/§3.3: 3x3 broadcast/reduce 2α; §3.4's 2x2x2 trace), and every transfer crosses one
// physical link, each all-reduce phase on its own dim.
#include <algorithm>
#include <tuple>

#include "shape_of.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

namespace {

const collective all_six[] = {collective::broadcast, collective::reduce,
                              collective::allreduce, collective::reduce_scatter,
                              collective::allgather, collective::alltoall};

// The lattices plus rings and shapes with d_i = 2 beside larger dims.
std::vector<std::string> lattices() {
    auto out = test::standard_lattices();
    out.insert(out.end(), {"ring:2", "ring:5", "ring:6", "torus:6x2", "mesh:2x6", "torus:2x1x3",
                           "mesh:1x1", "torus:1"});
    return out;
}

// Shapes for the closed-form checks: even and odd d_i, d_i = 2, mixed, 1-D to 3-D.
const char* const count_shapes[] = {
    "ring:2",      "ring:7",     "ring:8",     "torus:2x2",   "torus:3x3",   "torus:4x4",
    "torus:6x6",   "torus:5x3",  "torus:8x2",  "torus:2x2x2", "torus:4x4x2", "torus:3x4x5",
    "torus:4x4x4", "torus:1x7",  "mesh:2x2",   "mesh:3x3",    "mesh:4x4",    "mesh:6x5",
    "mesh:2x2x2",  "mesh:3x4x5", "mesh:8x1x1", "mesh:7",      "mesh:4x4x4",
};

const algorithms::algorithm& dims_for(collective coll) {
    return test::find_algorithm(coll, "dims");
}

algorithms::call call_on(collective coll, const std::string& shape, int64_t count, int root = 0,
                         int segments = 1) {
    return test::make_call(coll, *topology::shape::parse(shape), count, root, segments);
}

// What the verifier's global lockstep rounds charge one mesh all-gather traversal, in M:
// (N-1)/N unless a phase other than the last has d ≥ 5. Lines of such a phase finish after
// E(d) = ⌊d/2⌋+1 steps and start the next phase early, so each round costs the largest phase
// some line is in: phase j (blocks M/(D_0···D_j), active dims D_0..D_{m-1} in all-gather order)
// for E(D_j) rounds, phase 0 for the rest. The run does not wait for rounds and takes
// (N-1)/N (fabric_sim_closed_forms), which is the stated form; this is the count only.
double lockstep_mesh_allgather_beta(const topology::shape& t) {
    std::vector<int> d;
    for (int x : t.dims()) {
        if (x > 1) {
            d.push_back(x);
        }
    }
    if (t.wraps() || d.empty()) {
        return (t.size() - 1.0) / t.size();
    }
    double beta = 0, prod = d[0], rest = d[0] - 1;
    for (size_t j = 1; j < d.size(); ++j) {
        int early = std::min(d[j] - 1, d[j] / 2 + 1);
        prod *= d[j];
        beta += early / prod;
        rest += d[j] - 1 - early;
    }
    return beta + rest / d[0];
}

// The verifier's lockstep bytes, in M, where they differ from the stated form: the all-gather
// traversal of a mesh (above); elsewhere the stated n_beta.
double counted_beta(const algorithms::call& c, double stated) {
    double n = c.nranks;
    switch (c.coll) {
        case collective::allgather:
            return lockstep_mesh_allgather_beta(c.topo);
        case collective::allreduce:
            return (n - 1) / n + lockstep_mesh_allgather_beta(c.topo);
        default:
            return stated;
    }
}

// Verifies the call and compares the counted rounds/bytes with predict() (per-edge): equal,
// but for the mesh all-gather's lockstep count (counted_beta), which the stated form beats.
void expect_counts(const algorithms::algorithm& a, const algorithms::call& c) {
    auto st   = test::expect_verifies(a, c);
    double m  = c.coll == collective::alltoall ? double(c.nranks) * c.count * c.dtype_size
                                               : double(c.count) * c.dtype_size;
    auto edge = a.predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
    auto port = a.predict(algorithms::query_for(c, m, algorithms::port_model::single_port));
    // Sums of fractions: equal up to floating-point rounding, not one byte apart.
    double counted = counted_beta(c, edge.n_beta);
    if (st.rounds != edge.n_alpha || !test::same_bytes(st.edge_bytes, counted * m) ||
        counted < edge.n_beta - 1e-12) {
        LOOM_FAIL(test::describe_call(a, c) + ": counted " + std::to_string(st.rounds) +
                  " rounds, " + std::to_string(st.edge_bytes) + " B; stated " +
                  std::to_string(edge.n_alpha) + ", " + std::to_string(edge.n_beta * m));
    }
    // Lattice links are physical: the single-port form is the per-edge one.
    assert_true(port.n_alpha == edge.n_alpha && port.n_beta == edge.n_beta);
    bool ring_phases =
        c.topo.wraps() && (c.coll == collective::allreduce ||
                           c.coll == collective::reduce_scatter || c.coll == collective::allgather);
    if (ring_phases) {  // one link in and one out per rank and round
        assert_true(st.port_bytes == st.edge_bytes);
    }
}

}  // namespace

// Not applicable exactly on the star calls; every lattice call verifies.
template <collective C>
void verifies_over_sweep(void**) {
    test::expect_clean_sweep(dims_for(C), lattices(), test::applies::lattices_only);
}

// Pipelined trees with P segments, counts P does not divide, every root of small shapes.
static void dims_pipelined_trees_verify_for_every_root(void**) {
    for (auto coll : {collective::broadcast, collective::reduce}) {
        const auto& a = dims_for(coll);
        for (const char* shape : {"torus:3x4", "mesh:3x4", "torus:2x3x2", "mesh:5x1x2", "ring:6"}) {
            int n = topology::shape::parse(shape)->size();
            for (int root = 0; root < n; ++root) {
                for (int p : {2, 3, 7}) {
                    test::expect_verifies(a, call_on(coll, shape, 1000 + root, root, p));
                }
            }
        }
    }
}

static void dims_rejects_star_and_full_mesh(void**) {
    for (auto coll : all_six) {
        for (const char* shape : {"star:8", "fullmesh:8"}) {
            auto st = algorithms::check_call(dims_for(coll), call_on(coll, shape, 16));
            assert_int_equal(st.code(), LOOM_ERR_NOT_APPLICABLE);
            test::expect_has(
                st.to_string(),
                std::string("needs a torus, ring or mesh topology (got ") + shape + ")");
        }
    }
}

// Counted rounds and bytes equal the closed forms (count divisible by N, P and 2).
static void dims_counts_equal_closed_forms(void**) {
    for (auto coll : all_six) {
        const auto& a = dims_for(coll);
        for (const char* shape : count_shapes) {
            int n     = topology::shape::parse(shape)->size();
            bool tree = coll == collective::broadcast || coll == collective::reduce;
            for (int p : tree ? std::vector<int>{1, 4} : std::vector<int>{1}) {
                for (int root : tree ? std::vector<int>{0, n / 2, n - 1} : std::vector<int>{0}) {
                    int64_t count = coll == collective::alltoall ? 6 : int64_t{n} * 24;
                    expect_counts(a, call_on(coll, shape, count, root, p));
                }
            }
        }
    }
}

// Lu-TM §3.4: 8x8x8 all-reduce takes 2·Σ(8-1) = 42 hops, counted on the real schedule.
static void dims_allreduce_8x8x8_is_42_alpha(void**) {
    const auto& a = dims_for(collective::allreduce);
    auto c        = call_on(collective::allreduce, "torus:8x8x8", 512 * 4);
    auto cost = a.predict(algorithms::query_for(c, 512 * 16.0, algorithms::port_model::per_edge));
    assert_true(cost.n_alpha == 42);
    assert_true(cost.n_beta == 2.0 * 511 / 512);
    assert_int_equal(test::expect_verifies(a, c).rounds, 42);
}

// Lu-TM §3.1: on 2x2x2 a traversal is 3 hops dimension-decomposed, 7 on the flat ring.
static void dims_2x2x2_is_3_per_traversal_against_ring_7(void**) {
    const std::pair<collective, int> cases[] = {
        {collective::allreduce, 6}, {collective::reduce_scatter, 3}, {collective::allgather, 3}};
    for (const auto& [coll, dims_rounds] : cases) {
        const auto* ring = algorithms::find(coll, "ring");
        assert_non_null(ring);
        auto c = call_on(coll, "torus:2x2x2", 8 * 16);
        assert_int_equal(test::expect_verifies(dims_for(coll), c).rounds, dims_rounds);
        assert_int_equal(test::expect_verifies(*ring, c).rounds, dims_rounds / 3 * 7);
    }
}

// Lu-TM §3.4's 2x2x2 trace (a = rank 0, b = 4, e = 2, c = 1 in row-major X, Y, Z): a sends
// chunks 4-7 to b, then 2-3 to e, then 1 to c, keeping 0-3, 0-1, 0.
static void dims_allreduce_2x2x2_follows_the_trace(void**) {
    auto s     = test::generate_ok(dims_for(collective::allreduce),
                                   call_on(collective::allreduce, "torus:2x2x2", 8));
    auto sends = test::sends_of(s.ranks[0]);
    assert_true(sends.size() == 6);
    assert_true(sends[0].peer == 4 && sends[0].src == schedule::in(4, 4));
    assert_true(sends[1].peer == 2 && sends[1].src == schedule::out(2, 2));
    assert_true(sends[2].peer == 1 && sends[2].src == schedule::out(1, 1));
}

// Lu-TM §3.2/§3.3: bidirectional broadcast and reduce on a 3x3 torus take 2α (unidirectional
// 4α), on 2x2x2 3α; a 3x3 mesh from the corner 4α, from the centre 2α.
static void dims_trees_3x3_take_2_alpha(void**) {
    const std::tuple<const char*, int, int> cases[] = {{"torus:3x3", 0, 2},
                                                       {"torus:3x3", 4, 2},
                                                       {"torus:2x2x2", 5, 3},
                                                       {"mesh:3x3", 0, 4},
                                                       {"mesh:3x3", 4, 2}};
    for (auto coll : {collective::broadcast, collective::reduce}) {
        for (const auto& [shape, root, rounds] : cases) {
            auto st = test::expect_verifies(dims_for(coll), call_on(coll, shape, 90, root));
            assert_int_equal(st.rounds, rounds);
        }
    }
}

// Lu-TM §3.6 with docs/references.md#dims-a2a-pairs: 4x4 torus all-to-all 2·(2α + 4/8·M/BW); 2x2x2
// 3·(α + M/2BW).
static void dims_alltoall_per_phase_forms(void**) {
    const auto& a = dims_for(collective::alltoall);
    auto q        = algorithms::query_for(call_on(collective::alltoall, "torus:4x4", 2), 1.0,
                                          algorithms::port_model::per_edge);
    auto c4       = a.predict(q);
    assert_true(c4.n_alpha == 4 && c4.n_beta == 1.0);
    q.topo  = *topology::shape::parse("torus:2x2x2");
    auto c2 = a.predict(q);
    assert_true(c2.n_alpha == 3 && c2.n_beta == 1.5);
    q.topo  = *topology::shape::parse("mesh:4x4");  // Lu-TM §4.2: d/4 per phase
    auto m4 = a.predict(q);
    assert_true(m4.n_alpha == 6 && m4.n_beta == 2.0);
}

// Every send of every dims schedule goes to a physical neighbour.
static void dims_sends_only_to_neighbours(void**) {
    for (auto coll : all_six) {
        const auto& a = dims_for(coll);
        for (const auto& shape : lattices()) {
            int n = topology::shape::parse(shape)->size();
            for (int root : {0, n / 2, n - 1}) {
                auto c = call_on(coll, shape, 3 * n + 1, root, 3);
                auto s = test::generate_ok(a, c);
                for (const auto& rs : s.ranks) {
                    for (const auto& st : test::sends_of(rs)) {
                        if (c.topo.hops(rs.rank, st.peer) != 1) {
                            LOOM_FAIL(test::describe_call(a, c) + ": rank " +
                                      std::to_string(rs.rank) + " sends to non-neighbour " +
                                      std::to_string(st.peer));
                        }
                    }
                }
            }
        }
    }
}

// All-reduce phase i uses only dim-i links: each rank's sends, in order, run through the
// active dims 0, 1, ..., k-1 (reduce-scatter) and back k-1, ..., 0 (all-gather).
static void dims_allreduce_phase_i_uses_dim_i_links(void**) {
    const auto& a = dims_for(collective::allreduce);
    for (const auto& shape : lattices()) {
        auto c = call_on(collective::allreduce, shape, 1000);
        std::vector<int> want;
        for (int i = 0; i < c.topo.ndims(); ++i) {
            if (c.topo.dims()[i] > 1) {
                want.push_back(i);
            }
        }
        for (size_t k = want.size(); k-- > 1;) {
            want.push_back(want[k - 1]);
        }
        auto s = test::generate_ok(a, c);
        for (const auto& rs : s.ranks) {
            std::vector<int> seen;
            for (const auto& st : test::sends_of(rs)) {
                int d = test::axis_of_move(c.topo, rs.rank, st.peer);
                if (seen.empty() || seen.back() != d) {
                    seen.push_back(d);
                }
            }
            if (seen != want) {
                LOOM_FAIL(test::describe_call(a, c) + ": rank " + std::to_string(rs.rank) +
                          " sends along dims out of phase order");
            }
        }
    }
}

LOOM_TEST_MAIN("algorithms_torus_dims",
               cmocka_unit_test(verifies_over_sweep<collective::broadcast>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce>),
               cmocka_unit_test(verifies_over_sweep<collective::allreduce>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce_scatter>),
               cmocka_unit_test(verifies_over_sweep<collective::allgather>),
               cmocka_unit_test(verifies_over_sweep<collective::alltoall>),
               cmocka_unit_test(dims_pipelined_trees_verify_for_every_root),
               cmocka_unit_test(dims_rejects_star_and_full_mesh),
               cmocka_unit_test(dims_counts_equal_closed_forms),
               cmocka_unit_test(dims_allreduce_8x8x8_is_42_alpha),
               cmocka_unit_test(dims_2x2x2_is_3_per_traversal_against_ring_7),
               cmocka_unit_test(dims_allreduce_2x2x2_follows_the_trace),
               cmocka_unit_test(dims_trees_3x3_take_2_alpha),
               cmocka_unit_test(dims_alltoall_per_phase_forms),
               cmocka_unit_test(dims_sends_only_to_neighbours),
               cmocka_unit_test(dims_allreduce_phase_i_uses_dim_i_links))
