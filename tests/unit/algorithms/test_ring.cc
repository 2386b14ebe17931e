// SPDX-License-Identifier: Apache-2.0
// Ring family: verified over the sweep, and its counted rounds/bytes equal the
// stated closed forms (Lu-CA §5.1: N=4 all-reduce is 6α + 1.5·M/BW).
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm& ring(collective coll) {
    return test::find_algorithm(coll, "ring");
}

template <collective C>
void verifies_over_sweep(void**) {
    test::expect_clean_sweep(ring(C));
}

// Counted rounds and bytes equal the closed form, for every N up to 64 (count divisible).
static void ring_counts_equal_closed_forms(void**) {
    for (auto coll : {collective::allreduce, collective::reduce_scatter, collective::allgather,
                      collective::broadcast, collective::reduce}) {
        const auto& a = ring(coll);
        for (int n : test::standard_ranks()) {
            for (int p : {1, 4}) {
                auto c   = test::make_call(coll, n, int64_t{n} * 64 * 4, 0, p);
                auto st  = test::expect_verifies(a, c);
                double m = c.count * 4.0;
                auto cost =
                    a.predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
                if (st.rounds != cost.n_alpha || st.edge_bytes != cost.n_beta * m) {
                    LOOM_FAIL(test::describe_call(a, c) + ": counted " + std::to_string(st.rounds) +
                              " rounds, " + std::to_string(st.edge_bytes) + " B; stated " +
                              std::to_string(cost.n_alpha) + ", " +
                              std::to_string(cost.n_beta * m));
                }
                // One link in, one out per step: the single-port count is the same.
                assert_true(st.port_bytes == st.edge_bytes);
            }
        }
    }
}

static void ring_allreduce_n4_is_6_alpha_1_5_beta(void**) {
    const auto& a = ring(collective::allreduce);
    auto cost     = a.predict(test::cost_query_at(collective::allreduce, 4));
    assert_true(cost.n_alpha == 6);
    assert_true(cost.n_beta == 1.5);
}

LOOM_TEST_MAIN("algorithms_ring", cmocka_unit_test(verifies_over_sweep<collective::allreduce>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce_scatter>),
               cmocka_unit_test(verifies_over_sweep<collective::allgather>),
               cmocka_unit_test(verifies_over_sweep<collective::broadcast>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce>),
               cmocka_unit_test(ring_counts_equal_closed_forms),
               cmocka_unit_test(ring_allreduce_n4_is_6_alpha_1_5_beta))
