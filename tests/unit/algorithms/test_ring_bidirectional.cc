// SPDX-License-Identifier: Apache-2.0
// Bidirectional ring (`bidir-ring`): verified over the sweep; counted rounds and bytes
// equal the stated forms under both port models (per-edge: the ring's α, half its BW term for
// N ≥ 3; single-port: the flat ring's); both neighbours get half a block per step, on tags of
// their own; rank r ends reduce-scatter with flat block r.
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm& bidir(collective coll) {
    return test::find_algorithm(coll, "bidir-ring");
}

template <collective C>
void verifies_over_sweep(void**) {
    test::expect_clean_sweep(bidir(C));
}

// Counts divisible by 2N: every half-block the same size, so the forms are exact.
static void bidir_ring_counts_equal_closed_forms(void**) {
    for (auto coll : {collective::allreduce, collective::reduce_scatter, collective::allgather}) {
        for (int n : test::ranks_up_to(24, {32, 63, 64})) {
            auto c = test::make_call(coll, n, int64_t{n} * 2 * 48);
            test::expect_counts_equal_stated(bidir(coll), c, c.count * 4.0);
        }
    }
}

static void expect_cost(collective coll, int n, double n_alpha, double n_beta) {
    test::expect_stated_cost(bidir(coll), n, n_alpha, n_beta);
}

// Per-edge: N = 4 all-reduce 6α + 0.75·M/BW against the ring's 6α + 1.5; N ≤ 2 is the ring.
static void bidir_ring_closed_form_values(void**) {
    expect_cost(collective::allreduce, 1, 0, 0);
    expect_cost(collective::allreduce, 2, 2, 1);
    expect_cost(collective::allreduce, 3, 4, 2.0 / 3);
    expect_cost(collective::allreduce, 4, 6, 0.75);
    expect_cost(collective::allreduce, 8, 14, 7.0 / 8);
    expect_cost(collective::reduce_scatter, 2, 1, 0.5);
    expect_cost(collective::reduce_scatter, 4, 3, 3.0 / 8);
    expect_cost(collective::allgather, 5, 4, 0.4);
    auto q  = test::cost_query_at(collective::allreduce, 4);
    q.ports = algorithms::port_model::single_port;
    auto sp = bidir(collective::allreduce).predict(q);
    assert_true(sp.n_alpha == 6 && sp.n_beta == 1.5 && !sp.exact);
}

// Every step of a rank sends one half-block right on tag 0 and one left on tag 1, from the
// first step on; reduce-scatter leaves rank r with block r (the verifier proves the values).
static void bidir_ring_uses_both_neighbours_every_step(void**) {
    for (int n : {3, 4, 7}) {
        auto c = test::make_call(collective::allreduce, n, int64_t{n} * 2 * 10);
        auto s = test::generate_ok(bidir(collective::allreduce), c);
        for (int r = 0; r < n; ++r) {
            int right = 0, left = 0;
            for (const auto& st : test::sends_of(s.ranks[r])) {
                assert_int_equal(st.src.count, 10);
                if (st.peer == (r + 1) % n) {
                    assert_int_equal(st.tag, 0);
                    ++right;
                } else {
                    assert_int_equal(st.peer, (r + n - 1) % n);
                    assert_int_equal(st.tag, 1);
                    ++left;
                }
            }
            assert_int_equal(right, 2 * (n - 1));
            assert_int_equal(left, 2 * (n - 1));
        }
    }
}

static void bidir_ring_allreduce_verifies_with_channels(void**) {
    test::expect_verifies_with_channels(bidir(collective::allreduce));
}

LOOM_TEST_MAIN("algorithms_ring_bidirectional",
               cmocka_unit_test(verifies_over_sweep<collective::allreduce>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce_scatter>),
               cmocka_unit_test(verifies_over_sweep<collective::allgather>),
               cmocka_unit_test(bidir_ring_counts_equal_closed_forms),
               cmocka_unit_test(bidir_ring_closed_form_values),
               cmocka_unit_test(bidir_ring_uses_both_neighbours_every_step),
               cmocka_unit_test(bidir_ring_allreduce_verifies_with_channels))
