// SPDX-License-Identifier: Apache-2.0
// Bruck all-to-all: verified over the sweep; counted rounds/bytes equal the closed
// form ⌈log2N⌉α + Σ_k c_k/N·M/BW (c_k = slots j < N with bit k set; log2N/2 at N = 2^k,
// Lu-CA App. B.5, docs/references.md#bruck-crossover); the post-rotation is out[j] = work[(i - j)
// mod N] (docs/references.md#bruck-rotation) and the text's "rotate right by i" would not verify.
#include <cmath>

#include "schedule/verifier.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm* bruck() {
    return &test::find_algorithm(collective::alltoall, "bruck");
}

static algorithms::call make_call(int n, int64_t count) {
    return test::make_call(collective::alltoall, n, count);
}

static void bruck_alltoall_verifies_over_sweep(void**) {
    test::expect_clean_sweep(*bruck());
}

// Slots moved in round k, counted by brute force (independent of the generator's formula).
static int64_t moved_slots(int n) {
    int64_t moved = 0;
    for (int k = 0; (1 << k) < n; ++k) {
        for (int j = 0; j < n; ++j) {
            moved += (j >> k) & 1;
        }
    }
    return moved;
}

// Counted rounds and bytes equal the closed form for N = 1..40 and larger N, per-edge and
// single-port, and the closed form equals the brute-force slot count.
static void bruck_counts_equal_closed_forms(void**) {
    for (int n : test::ranks_up_to(40, {48, 63, 64, 65, 100})) {
        auto c    = make_call(n, 6);
        double m  = n * c.count * 4.0;
        auto st   = test::expect_counts_equal_stated(*bruck(), c, m);
        auto edge = bruck()->predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
        assert_true(edge.n_alpha == ceil(log2(n)));
        assert_true(std::abs(edge.n_beta - static_cast<double>(moved_slots(n)) / n) < 1e-12);
        for (const auto& rs : st.per_rank) {
            assert_true(rs.max_concurrent_peers <= 2);
        }
    }
}

// docs/references.md#bruck-rotation at N = 3, 5, 6, 7: the generated post-rotation is out[j] =
// work[(i - j) mod N], the schedule verifies, and the same schedule with Lu-CA's "rotate right by
// i" (out[j] = work[(j - i) mod N]) fails the verifier.
static void bruck_rotation_is_exact_at_n_3_5_6_7(void**) {
    for (int n : {3, 5, 6, 7}) {
        for (int64_t cnt : {1, 3}) {
            auto c = make_call(n, cnt);
            test::expect_verifies(*bruck(), c);
            auto s = test::generate_ok(*bruck(), c);
            for (auto& rs : s.ranks) {
                size_t first = rs.steps.size() - n;
                for (int j = 0; j < n; ++j) {
                    auto& st = rs.steps[first + j];
                    assert_true(st.kind == schedule::step_kind::local_copy);
                    assert_true(st.dst == schedule::out(j * cnt, cnt));
                    assert_true(st.src == schedule::tmp(((rs.rank - j + n) % n) * cnt, cnt));
                    st.src.offset = ((j - rs.rank + n) % n) * cnt;  // the text's rotate-right
                }
            }
            assert_false(schedule::verify(s).result.is_ok());
        }
    }
}

// Each round is one message of c_k slots to rank i + 2^k (N = 6: 3, 2, 2 slots; N = 8: 4 each).
static void bruck_round_messages_follow_bit_k(void**) {
    for (auto [n, want] :
         {std::pair{6, std::vector<int64_t>{3, 2, 2}}, std::pair{8, std::vector<int64_t>{4, 4, 4}},
          std::pair{5, std::vector<int64_t>{2, 2, 1}}}) {
        auto s = test::generate_ok(*bruck(), make_call(n, 10));
        for (const auto& rs : s.ranks) {
            std::vector<int64_t> slots;
            for (const auto& st : test::sends_of(rs)) {
                assert_int_equal(st.peer, (rs.rank + (1 << slots.size())) % n);
                slots.push_back(st.src.count / 10);
            }
            assert_true(slots == want);
        }
    }
}

// Lu-CA App. B.5 at N = 4: 2α + M/BW; crossover with pairwise at M* = 4αBW
// (docs/references.md#bruck-crossover). Non-powers of two count the real slots: N = 5 is 1·M/BW
// (not ⌈log2 5⌉/2 = 1.5).
static void bruck_n4_is_2_alpha_1_beta(void**) {
    auto q    = test::cost_query_at(collective::alltoall, 4);
    auto cost = bruck()->predict(q);
    assert_true(cost.n_alpha == 2);
    assert_true(cost.n_beta == 1);
    assert_true(cost.note.find("M* = 4·α·BW") != std::string::npos);
    q.nranks = 8;
    assert_true(bruck()->predict(q).note.find("M* = 6.4·α·BW") != std::string::npos);
    q.nranks = 5;
    cost     = bruck()->predict(q);
    assert_true(cost.n_alpha == 3);
    assert_true(cost.n_beta == 1);
    q.nranks = 3;
    assert_true(bruck()->predict(q).note.find("same cost as pairwise") != std::string::npos);
}

LOOM_TEST_MAIN("algorithms_bruck", cmocka_unit_test(bruck_alltoall_verifies_over_sweep),
               cmocka_unit_test(bruck_counts_equal_closed_forms),
               cmocka_unit_test(bruck_rotation_is_exact_at_n_3_5_6_7),
               cmocka_unit_test(bruck_round_messages_follow_bit_k),
               cmocka_unit_test(bruck_n4_is_2_alpha_1_beta))
