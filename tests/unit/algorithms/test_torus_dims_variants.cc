// SPDX-License-Identifier: Apache-2.0
// The per-dimension variants beside `dims`: `dims-one-way` broadcast and reduce (one way round
// each torus ring, D = Σ(d_i-1)) and per-dimension Rabenseifner (`dims-rabenseifner`,
// `dims-halving`, `dims-doubling`: a butterfly inside each line). Verified over the sweep on
// the shapes they apply to, refused elsewhere, and their counts equal the stated forms: the
// one-way trees' rounds and bytes; the butterflies' routed hops and busiest-link bytes under
// both tie rules (the lockstep count their form states).
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

namespace {

const std::vector<std::string> tori = {"torus:2x2",   "torus:3x3",   "torus:4x4",   "torus:2x2x2",
                                       "torus:3x3x3", "torus:4x4x2", "torus:8x1x1", "torus:5x3",
                                       "torus:1x7",   "torus:3x4x5", "ring:6",      "ring:1"};
const std::vector<std::string> pow2_lattices = {
    "torus:2x2", "torus:4x4", "torus:2x2x2", "torus:4x4x2", "torus:8x1x1", "torus:1x8", "ring:16",
    "mesh:2x2",  "mesh:4x4",  "mesh:2x2x2",  "mesh:4x4x2",  "mesh:8x1x1",  "mesh:2x8"};

const algorithms::algorithm& one_way(collective coll) {
    return test::find_algorithm(coll, "dims-one-way");
}
const algorithms::algorithm& butterfly(collective coll) {
    return test::find_algorithm(coll, coll == collective::allreduce        ? "dims-rabenseifner"
                                      : coll == collective::reduce_scatter ? "dims-halving"
                                                                           : "dims-doubling");
}

algorithms::call call_on(collective coll, const std::string& shape, int64_t count, int root = 0,
                         int segments = 1) {
    return test::make_call(coll, *topology::shape::parse(shape), count, root, segments);
}

const collective butterflies[] = {collective::allreduce, collective::reduce_scatter,
                                  collective::allgather};

}  // namespace

template <collective C>
void one_way_verifies_over_sweep(void**) {
    test::expect_clean_sweep(one_way(C), tori, test::applies::lattices_only);
}

template <collective C>
void butterfly_verifies_over_sweep(void**) {
    test::expect_clean_sweep(butterfly(C), pow2_lattices, test::applies::lattices_only);
}

// Meshes have no wrap to go round; the butterflies need power-of-two lines.
static void variants_refuse_what_they_do_not_fit(void**) {
    for (auto coll : {collective::broadcast, collective::reduce}) {
        for (const char* shape : {"mesh:4x4", "star:8"}) {
            auto st = algorithms::check_call(one_way(coll), call_on(coll, shape, 16));
            assert_int_equal(st.code(), LOOM_ERR_NOT_APPLICABLE);
        }
    }
    for (auto coll : butterflies) {
        for (const char* shape : {"torus:3x4", "mesh:6x2", "star:8", "ring:12"}) {
            auto st = algorithms::check_call(butterfly(coll), call_on(coll, shape, 48));
            assert_int_equal(st.code(), LOOM_ERR_NOT_APPLICABLE);
        }
    }
}

// Every root, P segments not dividing the count.
static void one_way_pipelined_trees_verify_for_every_root(void**) {
    for (auto coll : {collective::broadcast, collective::reduce}) {
        for (const char* shape : {"torus:3x4", "torus:2x3x2", "ring:6", "torus:4x1x3"}) {
            int n = topology::shape::parse(shape)->size();
            for (int root = 0; root < n; ++root) {
                for (int p : {2, 3, 7}) {
                    test::expect_verifies(one_way(coll),
                                          call_on(coll, shape, 1000 + root, root, p));
                }
            }
        }
    }
}

// Rounds = D+P-1 with D = Σ(d_i-1) from every root; bytes (D+P-1)/P·M.
static void one_way_counts_equal_closed_forms(void**) {
    for (auto coll : {collective::broadcast, collective::reduce}) {
        for (const char* shape :
             {"torus:4x4", "torus:3x4x5", "torus:8x8", "ring:9", "torus:2x2x2"}) {
            int n = topology::shape::parse(shape)->size();
            for (int p : {1, 4}) {
                for (int root : {0, n / 2, n - 1}) {
                    auto c   = call_on(coll, shape, int64_t{n} * 24, root, p);
                    auto st  = test::expect_verifies(one_way(coll), c);
                    double m = c.count * 4.0;
                    auto f =
                        algorithms::predict(one_way(coll), c, m, algorithms::port_model::per_edge);
                    int depth = 0;
                    for (int d : c.topo.dims()) {
                        depth += d - 1;
                    }
                    if (st.rounds != f.n_alpha || !test::same_bytes(st.edge_bytes, f.n_beta * m) ||
                        f.n_alpha != depth + p - 1) {
                        LOOM_FAIL(test::describe_call(one_way(coll), c) + ": counted " +
                                  std::to_string(st.rounds) + " rounds, stated " +
                                  std::to_string(f.n_alpha) + ", D = " + std::to_string(depth));
                    }
                }
            }
        }
    }
}

// Against `dims`: the same bytes, Σ(d_i-1) against Σ⌊d_i/2⌋ hops (8x8x8: 21 against 12).
static void one_way_8x8x8_is_21_alpha_against_dims_12(void**) {
    auto c   = call_on(collective::broadcast, "torus:8x8x8", 512);
    auto one = algorithms::predict(one_way(collective::broadcast), c, 2048,
                                   algorithms::port_model::per_edge);
    auto two = algorithms::predict(test::find_algorithm(collective::broadcast, "dims"), c, 2048,
                                   algorithms::port_model::per_edge);
    assert_true(one.n_alpha == 21 && one.n_beta == 21);
    assert_true(two.n_alpha == 12 && two.n_beta == 12);
}

// The butterflies' counts when every transfer is routed over the physical links: α per hop
// of each round's longest route, the busiest link's bytes per round.
static schedule::schedule_stats routed_stats(const algorithms::algorithm& a,
                                             const algorithms::call& c) {
    schedule::verify_options options;
    options.route_links = [&c](int src, int dst, std::vector<uint64_t>& links) {
        auto hops = routing::route(c.topo, src, dst, c.ties);
        for (size_t i = 1; i < hops.size(); ++i) {
            links.push_back((static_cast<uint64_t>(hops[i - 1]) << 32) |
                            static_cast<uint32_t>(hops[i]));
        }
    };
    auto report = schedule::verify(test::generate_ok(a, c), options);
    if (!report.result) {
        LOOM_FAIL(test::describe_call(a, c) + ": " + report.result.to_string());
    }
    return report.stats;
}

static void butterfly_routed_counts_equal_stated(void**) {
    for (auto coll : butterflies) {
        const auto& a = butterfly(coll);
        for (const char* shape : {"torus:4x4", "torus:8x8", "torus:2x4x8", "mesh:4x4", "mesh:8x2",
                                  "ring:16", "torus:16x4", "mesh:2x2x2"}) {
            for (auto ties : {routing::tie_rule::toward_plus, routing::tie_rule::source_parity}) {
                auto c   = call_on(coll, shape, int64_t{topology::shape::parse(shape)->size()} * 8);
                c.ties   = ties;
                double m = c.count * 4.0;
                auto st  = routed_stats(a, c);
                auto f   = algorithms::predict(a, c, m, algorithms::port_model::per_edge);
                auto sp  = algorithms::predict(a, c, m, algorithms::port_model::single_port);
                if (st.hop_rounds != f.n_alpha || !test::same_bytes(st.link_bytes, f.n_beta * m) ||
                    sp.n_alpha != f.n_alpha || sp.n_beta != f.n_beta) {
                    LOOM_FAIL(test::describe_call(a, c) + " " +
                              std::string(routing::tie_rule_name(ties)) + ": counted " +
                              std::to_string(st.hop_rounds) + " hops, " +
                              std::to_string(st.link_bytes) + " B; stated " +
                              std::to_string(f.n_alpha) + ", " + std::to_string(f.n_beta * m));
                }
            }
        }
    }
}

// The hops a distance-δ exchange crosses add up to the ring's Σ(d_i-1), not Σlog2 d_i:
// 8x8x8 all-reduce 42α (Lu-TM App. A prints 18); 4x4: 3.125·M/BW toward-plus, 1.875
// source-parity (dims's 2(N-1)/N).
static void butterfly_stated_values(void**) {
    const auto& a = butterfly(collective::allreduce);
    auto c        = call_on(collective::allreduce, "torus:8x8x8", 512);
    assert_true(algorithms::predict(a, c, 2048, algorithms::port_model::per_edge).n_alpha == 42);
    auto q = algorithms::query_for(call_on(collective::allreduce, "torus:4x4", 16), 64,
                                   algorithms::port_model::per_edge);
    auto f = a.predict(q);
    assert_true(f.n_alpha == 12 && f.n_beta == 3.125 && !f.exact);
    q.ties = routing::tie_rule::source_parity;
    assert_true(a.predict(q).n_beta == 1.875);
}

static void butterfly_sends_one_message_per_step_to_its_line_partner(void**) {
    auto c = call_on(collective::allreduce, "torus:4x8", 32 * 16);
    auto s = test::generate_ok(butterfly(collective::allreduce), c);
    for (int r = 0; r < 32; ++r) {
        std::vector<int> peers;
        for (const auto& st : test::sends_of(s.ranks[r])) {
            peers.push_back(st.peer);
        }
        // Dim 0 (partners 2, 1 rows away), dim 1 (4, 2, 1 columns away), then back.
        int x = r / 8, y = r % 8;
        std::vector<int> expect = {(x ^ 2) * 8 + y, (x ^ 1) * 8 + y, x * 8 + (y ^ 4),
                                   x * 8 + (y ^ 2), x * 8 + (y ^ 1)};
        for (int i = 4; i >= 0; --i) {
            expect.push_back(expect[i]);
        }
        assert_true(peers == expect);
    }
}

LOOM_TEST_MAIN("algorithms_torus_dims_variants",
               cmocka_unit_test(one_way_verifies_over_sweep<collective::broadcast>),
               cmocka_unit_test(one_way_verifies_over_sweep<collective::reduce>),
               cmocka_unit_test(butterfly_verifies_over_sweep<collective::allreduce>),
               cmocka_unit_test(butterfly_verifies_over_sweep<collective::reduce_scatter>),
               cmocka_unit_test(butterfly_verifies_over_sweep<collective::allgather>),
               cmocka_unit_test(variants_refuse_what_they_do_not_fit),
               cmocka_unit_test(one_way_pipelined_trees_verify_for_every_root),
               cmocka_unit_test(one_way_counts_equal_closed_forms),
               cmocka_unit_test(one_way_8x8x8_is_21_alpha_against_dims_12),
               cmocka_unit_test(butterfly_routed_counts_equal_stated),
               cmocka_unit_test(butterfly_stated_values),
               cmocka_unit_test(butterfly_sends_one_message_per_step_to_its_line_partner))
