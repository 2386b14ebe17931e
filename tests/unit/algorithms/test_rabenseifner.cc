// SPDX-License-Identifier: Apache-2.0
// Rabenseifner all-reduce: verified over the sweep; counted rounds and bytes equal
// 2⌈log2N⌉α + 2(N-1)/N·M/BW for every N under both port models; Lu-CA B.2's N = 4 numbers
// (4α + 1.5·M/BW, payloads M/2, M/4 | M/4, M/2) with Ring-Tree's partner order and rank r owning
// block r after the reduce-scatter (docs/references.md#rabenseifner-order).
#include <vector>

#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm& algo() {
    return test::find_algorithm(collective::allreduce, "rabenseifner");
}

static void rabenseifner_allreduce_verifies_over_sweep(void**) {
    test::expect_clean_sweep(algo());
}

// Counted rounds == n_alpha; edge bytes (per-edge) and port bytes (single-port) == n_beta·M.
static void rabenseifner_counts_equal_closed_forms(void**) {
    for (int n : test::ranks_up_to(40, {48, 63, 64, 96, 100, 128})) {
        auto c = test::make_call(collective::allreduce, n, int64_t{n} * 64);  // N divides it
        test::expect_counts_equal_stated(algo(), c, c.count * 4.0);
    }
}

static void expect_cost(int n, double n_alpha, double n_beta) {
    test::expect_stated_cost(algo(), n, n_alpha, n_beta);
}

// Lu-CA B.2: 4α + 1.5·M/BW at N = 4; the same form, 2⌈log2N⌉ rounds, for other N.
static void rabenseifner_closed_form_values(void**) {
    expect_cost(1, 0, 0);
    expect_cost(2, 2, 1);
    expect_cost(4, 4, 1.5);
    expect_cost(8, 6, 1.75);
    expect_cost(6, 6, 5.0 / 3);
    expect_cost(12, 8, 11.0 / 6);
}

// The N = 4 trace: 4 rounds, 1.5·M counted; rank r exchanges with r^2, r^1 (reduce-scatter,
// Ring-Tree's order) then r^1, r^2 (all-gather) with payloads M/2, M/4, M/4, M/2; the
// reduce-scatter leaves block r on rank r (its second reduction writes block r of the output).
static void rabenseifner_n4_trace(void**) {
    auto c   = test::make_call(collective::allreduce, 4, 4 * 1000);
    auto blk = int64_t{1000};
    auto st  = test::expect_verifies(algo(), c);
    assert_int_equal(st.rounds, 4);
    assert_true(st.edge_bytes == 1.5 * c.count * 4);
    assert_true(st.port_bytes == 1.5 * c.count * 4);
    auto s = test::generate_ok(algo(), c);
    for (int r = 0; r < 4; ++r) {
        std::vector<int> peers;
        std::vector<int64_t> sizes;
        std::vector<schedule::region> reduced;
        for (const auto& step : s.ranks[r].steps) {
            if (step.kind == schedule::step_kind::send) {
                peers.push_back(step.peer);
                sizes.push_back(step.src.count);
            } else if (step.kind == schedule::step_kind::recv_reduce) {
                reduced.push_back(step.dst);
            }
        }
        assert_true((peers == std::vector<int>{r ^ 2, r ^ 1, r ^ 1, r ^ 2}));
        assert_true((sizes == std::vector<int64_t>{2 * blk, blk, blk, 2 * blk}));
        assert_int_equal(reduced.size(), 2);
        assert_true(reduced[1] == schedule::out(r * blk, blk));
        // The butterfly accumulates in the output: no scratch.
        assert_int_equal(s.ranks[r].scratch_count, 0);
    }
}

// Channels run the algorithm on slices with stacked scratch (registry.cc): still exact.
static void rabenseifner_allreduce_verifies_with_channels(void**) {
    test::expect_verifies_with_channels(algo());
}

LOOM_TEST_MAIN("algorithms_rabenseifner",
               cmocka_unit_test(rabenseifner_allreduce_verifies_over_sweep),
               cmocka_unit_test(rabenseifner_counts_equal_closed_forms),
               cmocka_unit_test(rabenseifner_closed_form_values),
               cmocka_unit_test(rabenseifner_n4_trace),
               cmocka_unit_test(rabenseifner_allreduce_verifies_with_channels))
