// SPDX-License-Identifier: Apache-2.0
// Hierarchical (2-D) ring all-reduce `hier-ring`: verified over the lattice sweep
// (N × count × root; not applicable on a star); counted rounds and bytes equal the stated
// 2(G+K-2)α + 2(N-1)/N·M/BW under both port models; each phase talks only inside a group or
// only across groups; Ring-Tree's hierarchical exercise and the crossover against the flat
// ring (docs/references.md#hierarchical-ring), with predict agreeing on the side of it.
#include <cmath>
#include <limits>
#include <set>

#include "algorithms/hier_ring.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using algorithms::port_model;
using schedule::collective;

static const algorithms::algorithm& hier() {
    return test::find_algorithm(collective::allreduce, "hier-ring");
}

static algorithms::call call_on(const char* topo, int64_t count) {
    return test::make_call(collective::allreduce, topology::shape::parse(topo).value(), count);
}

// The lattices plus rings, groups of 1 and 2, and single groups.
static std::vector<std::string> lattices() {
    auto out = test::standard_lattices();
    out.insert(out.end(), {"ring:2", "ring:5", "torus:6x2", "mesh:2x6", "torus:4x1", "mesh:1x1",
                           "torus:8x8", "mesh:3x2x4"});
    return out;
}

static void hier_ring_verifies_over_lattice_sweep(void**) {
    test::expect_clean_sweep(hier(), lattices(), test::applies::lattices_only);
}

// rounds = 2(G-1) + 2(K-1), bytes = 2(N-1)/N·M for counts N divides, per-edge and
// single-port; N = 64 as 8x8 is 28 rounds against the flat ring's 126.
static void hier_ring_counts_equal_stated_form(void**) {
    const char* shapes[] = {"ring:7",    "torus:2x2",  "torus:3x3",   "torus:4x4", "torus:5x3",
                            "torus:3x5", "mesh:2x4",   "mesh:4x2",    "torus:8x8", "mesh:1x7",
                            "torus:7x1", "mesh:3x4x5", "torus:2x2x2", "torus:6x2", "mesh:16x4"};
    for (const char* topo : shapes) {
        auto shape = topology::shape::parse(topo).value();
        for (int64_t per_rank : {1, 12}) {
            auto c  = call_on(topo, per_rank * shape.size());
            auto st = test::expect_counts_equal_stated(hier(), c, c.count * 4.0);
            int g = shape.dims().back(), k = shape.size() / g;
            auto cst =
                hier().predict(algorithms::query_for(c, c.count * 4.0, port_model::per_edge));
            assert_int_equal(st.rounds, 2 * (g - 1) + 2 * (k - 1));
            double n = shape.size();
            assert_true(std::fabs(cst.n_beta - 2 * (n - 1) / n) < 1e-12 && cst.exact);
        }
    }
    auto st = test::expect_verifies(hier(), call_on("torus:8x8", 64 * 10));
    assert_int_equal(st.rounds, 28);
}

// Phases 1 and 3 talk inside the group (same row), phase 2 across it (same column): every
// peer of rank k·G + g is either k·G + g' or k'·G + g, and rank 0 of torus:4x4 talks to
// exactly its two row and two column ring neighbours.
static void hier_ring_talks_only_along_rows_and_columns(void**) {
    for (const char* topo : {"torus:4x4", "mesh:3x5", "torus:3x4x5"}) {
        auto shape = topology::shape::parse(topo).value();
        auto s     = test::generate_ok(hier(), call_on(topo, shape.size() * 3));
        int g      = shape.dims().back();
        for (int r = 0; r < shape.size(); ++r) {
            for (const auto& st : test::sends_of(s.ranks[r])) {
                bool same_group = st.peer / g == r / g, same_column = st.peer % g == r % g;
                if (same_group == same_column) {
                    LOOM_FAIL(std::string(topo) + ": rank " + std::to_string(r) + " sends to " +
                              std::to_string(st.peer));
                }
            }
        }
    }
    auto s = test::generate_ok(hier(), call_on("torus:4x4", 16 * 3));
    std::set<int> peers;
    for (const auto& st : test::sends_of(s.ranks[0])) {
        peers.insert(st.peer);
    }
    assert_true((peers == std::set<int>{1, 4}));  // right in its row, down in its column
}

static void hier_ring_is_not_applicable_on_a_star(void**) {
    auto c = test::make_call(collective::allreduce, 8, 64);
    assert_int_equal(hier().applicable(c).code(), LOOM_ERR_NOT_APPLICABLE);
    assert_true(hier().applicable(c).message().find("last dimension") != std::string::npos);
    auto cost = hier().predict(algorithms::query_for(c, 256, port_model::per_edge));
    assert_true(std::isinf(cost.n_alpha) && !cost.exact);
}

// Ring-Tree's exercise: 8 nodes of 8 GPUs, NVLink 600 GB/s and 1 µs, network 100 GB/s and
// 5 µs, 1 GB (decimal units): flat ring 20.3 ms, 2D ring 1.47 + 2.26 + 1.47 = 5.2 ms. With a
// network port per GPU the 2D ring never loses (its BW term is below the flat ring's); with
// one port per node shared by the G inter-group rings it loses above M* = Δα / Δβ.
static void hier_ring_reproduces_the_text_and_its_crossover(void**) {
    algorithms::two_level_links l;
    l.alpha_intra_s = 1e-6, l.bw_intra_bytes_per_s = 600e9;
    l.alpha_inter_s = 5e-6, l.bw_inter_bytes_per_s = 100e9;
    double flat = algorithms::flat_ring_time_s(8, 8, 1e9, l);
    double hier = algorithms::hier_ring_time_s(8, 8, 1e9, l);
    assert_true(std::fabs(flat - 20.3175e-3) < 1e-9);
    assert_true(std::fabs(hier - 5.18816667e-3) < 1e-9);
    assert_true(std::round(flat / hier * 10) == 39);  // the text's 3.9x
    assert_true(std::isinf(algorithms::hier_ring_crossover_bytes(8, 8, l)));

    l.shared_port = true;
    double cross  = algorithms::hier_ring_crossover_bytes(8, 8, l);
    // Δα = 2·63·5 - 2·7·1 - 2·7·5 = 546 µs; Δβ = (7/4/600 + 7/4/100 - 63/32/100) / 1e9 s/B.
    double expect = 546e-6 / ((1.75 / 600 + 1.75 / 100 - 63.0 / 32 / 100) / 1e9);
    assert_true(std::fabs(cross - expect) < 1e-6 * expect);
    assert_true(cross > 7.4e8 && cross < 7.6e8);
    for (double m : {1e6, 0.9 * cross, 1.1 * cross, 1e9}) {
        bool hier_faster =
            algorithms::hier_ring_time_s(8, 8, m, l) < algorithms::flat_ring_time_s(8, 8, m, l);
        assert_true(hier_faster == (m < cross));
    }
    // Equal links (one class): no crossover, the 2D ring is never slower.
    algorithms::two_level_links same;
    same.alpha_intra_s = same.alpha_inter_s = 1e-6;
    same.bw_intra_bytes_per_s = same.bw_inter_bytes_per_s = 25e9;
    assert_true(std::isinf(algorithms::hier_ring_crossover_bytes(4, 16, same)));
}

// With one link class the crossover formula says the 2D ring wins at every size; predict
// (the tuner's ranking) on torus:8x8 and mesh:4x16 agrees from 8 B to 1 GB against the flat
// ring, whose routed schedule pays more hops per round.
static void predict_agrees_with_the_crossover_side(void**) {
    const auto& ring = test::find_algorithm(collective::allreduce, "ring");
    algorithms::two_level_links same;
    same.alpha_intra_s = same.alpha_inter_s = 1e-6;
    same.bw_intra_bytes_per_s = same.bw_inter_bytes_per_s = 25e9;
    for (const char* topo : {"torus:8x8", "mesh:4x16"}) {
        auto shape = topology::shape::parse(topo).value();
        int g = shape.dims().back(), k = shape.size() / g;
        assert_true(std::isinf(algorithms::hier_ring_crossover_bytes(k, g, same)));
        for (double bytes : {8.0, 1e4, 1e6, 1e9}) {
            auto c     = call_on(topo, shape.size() * 4);
            double t_h = algorithms::predict(hier(), c, bytes, port_model::per_edge)
                             .time_s(1e-6, 25e9, bytes);
            double t_r =
                algorithms::predict(ring, c, bytes, port_model::per_edge).time_s(1e-6, 25e9, bytes);
            double t_fh = algorithms::hier_ring_time_s(k, g, bytes, same);
            double t_fr = algorithms::flat_ring_time_s(k, g, bytes, same);
            if (!(t_h < t_r) || !(t_fh < t_fr)) {
                LOOM_FAIL(std::string(topo) + " at " + std::to_string(bytes) +
                          ": predict hier-ring " + std::to_string(t_h) + " s, ring " +
                          std::to_string(t_r) + " s");
            }
        }
    }
}

LOOM_TEST_MAIN("algorithms_hier_ring", cmocka_unit_test(hier_ring_verifies_over_lattice_sweep),
               cmocka_unit_test(hier_ring_counts_equal_stated_form),
               cmocka_unit_test(hier_ring_talks_only_along_rows_and_columns),
               cmocka_unit_test(hier_ring_is_not_applicable_on_a_star),
               cmocka_unit_test(hier_ring_reproduces_the_text_and_its_crossover),
               cmocka_unit_test(predict_agrees_with_the_crossover_side))
