// SPDX-License-Identifier: Apache-2.0
// Pairwise all-to-all: verified over the sweep; its counted rounds and bytes equal
// (N-1)α + (N-1)/N·M/BW under both port models (Lu-CA §7.2: N = 4 is 3α + 3/4·M/BW); step k
// pairs rank r with r+k (send) and r-k (receive).
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;

static const algorithms::algorithm* pairwise() {
    return &test::find_algorithm(schedule::collective::alltoall, "pairwise");
}

static algorithms::call alltoall_call(int n, int64_t count) {
    return test::make_call(schedule::collective::alltoall, n, count);
}

static void pairwise_verifies_over_sweep(void**) {
    test::expect_clean_sweep(*pairwise(), test::standard_lattices(), test::applies::everywhere,
                             500);
}

// Rounds, per-edge bytes and single-port bytes equal the closed form for every N.
static void pairwise_counts_equal_closed_form(void**) {
    for (int n : test::standard_ranks()) {
        for (int64_t count : {int64_t{1}, int64_t{256}}) {
            auto c   = alltoall_call(n, count);
            double m = static_cast<double>(n) * count * c.dtype_size;
            test::expect_counts_equal_stated(*pairwise(), c, m);
            for (auto ports :
                 {algorithms::port_model::per_edge, algorithms::port_model::single_port}) {
                assert_true(pairwise()->predict(algorithms::query_for(c, m, ports)).exact);
            }
        }
    }
}

static void pairwise_n4_is_3_alpha_3_quarter_beta(void**) {
    auto cost = pairwise()->predict(test::cost_query_at(schedule::collective::alltoall, 4));
    assert_true(cost.n_alpha == 3);
    assert_true(cost.n_beta == 0.75);
}

// Step k: rank r's k-th send goes to r+k and carries input block r+k; its k-th receive
// comes from r-k into output block r-k (Lu-CA §7.2's staggered offsets).
static void pairwise_step_k_pairs_r_plus_k_and_r_minus_k(void**) {
    for (int n : {2, 5, 8}) {
        auto c = alltoall_call(n, 3);
        auto s = test::generate_ok(*pairwise(), c);
        for (const auto& rs : s.ranks) {
            int sends = 0, recvs = 0;
            for (const auto& st : rs.steps) {
                if (st.kind == schedule::step_kind::send) {
                    ++sends;
                    int to = (rs.rank + sends) % n;
                    assert_int_equal(st.peer, to);
                    assert_true(st.src == schedule::in(to * 3, 3));
                } else if (st.kind == schedule::step_kind::recv) {
                    ++recvs;
                    int from = ((rs.rank - recvs) % n + n) % n;
                    assert_int_equal(st.peer, from);
                    assert_true(st.dst == schedule::out(from * 3, 3));
                }
            }
            assert_int_equal(sends, n - 1);
            assert_int_equal(recvs, n - 1);
        }
    }
}

// Every round each rank talks to exactly one destination and one source: no rank has two
// sends (or two receives) in one round, so the single-port count equals the per-edge one.
static void pairwise_one_peer_each_way_per_round(void**) {
    for (int n : {3, 7, 16}) {
        auto st = test::expect_verifies(*pairwise(), alltoall_call(n, 10));
        for (const auto& rs : st.per_rank) {
            assert_true(rs.max_concurrent_peers <= 2);
        }
        assert_true(st.port_bytes == st.edge_bytes);
    }
}

LOOM_TEST_MAIN("alltoall_pairwise", cmocka_unit_test(pairwise_verifies_over_sweep),
               cmocka_unit_test(pairwise_counts_equal_closed_form),
               cmocka_unit_test(pairwise_n4_is_3_alpha_3_quarter_beta),
               cmocka_unit_test(pairwise_step_k_pairs_r_plus_k_and_r_minus_k),
               cmocka_unit_test(pairwise_one_peer_each_way_per_round))
