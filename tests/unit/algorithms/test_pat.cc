// SPDX-License-Identifier: Apache-2.0
// PAT family: verified over the sweep; counted rounds/bytes equal the closed form
// ⌈log2N⌉α + (N-1)/N·M/BW (Lu-CA App. A) for powers of two and other N alike; the per-round
// payload grows 1, 2, 4 blocks per link at N = 8 (docs/references.md#pat-payload), not a constant
// M/N.
#include <cmath>

#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm* pat(collective coll) {
    return &test::find_algorithm(coll, "pat");
}

template <collective C>
void verifies_over_sweep(void**) {
    test::expect_clean_sweep(*pat(C));
}

// Counted rounds and bytes equal the closed form for N = 1..40 and a few larger N (count
// divisible by N), per-edge and single-port.
static void pat_counts_equal_closed_forms(void**) {
    for (auto coll : {collective::allgather, collective::reduce_scatter}) {
        const auto* a = pat(coll);
        for (int n : test::ranks_up_to(40, {48, 63, 64, 65, 96, 100})) {
            auto c    = test::make_call(coll, n, int64_t{n} * 24);
            double m  = c.count * 4.0;
            auto st   = test::expect_counts_equal_stated(*a, c, m);
            auto edge = a->predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
            assert_true(edge.n_alpha == ceil(log2(n)));
            // One partner in and one out per round.
            for (const auto& rs : st.per_rank) {
                assert_true(rs.max_concurrent_peers <= 2);
            }
        }
    }
}

// The block counts of each rank's sends, in schedule order.
static std::vector<int64_t> send_blocks(const schedule::rank_schedule& rs, int64_t block) {
    std::vector<int64_t> out;
    for (const auto& s : test::sends_of(rs)) {
        out.push_back(s.src.count / block);
    }
    return out;
}

static void expect_round_payloads(collective coll, int n, std::vector<int64_t> want) {
    int64_t block = 10;
    auto s        = test::generate_ok(*pat(coll), test::make_call(coll, n, n * block));
    for (const auto& rs : s.ranks) {
        if (send_blocks(rs, block) != want) {
            LOOM_FAIL(std::string(schedule::collective_name(coll)) + " N=" + std::to_string(n) +
                      " rank " + std::to_string(rs.rank) + ": unexpected per-round payload");
        }
    }
}

// docs/references.md#pat-payload: at N = 8 round k moves 2^k blocks per link (k = 0, 1, 2): one
// message per round, growing; the reduce-scatter mirror shrinks 4, 2, 1. Other N: the |new_k|
// counts.
static void pat_n8_round_payload_grows_1_2_4_blocks(void**) {
    expect_round_payloads(collective::allgather, 8, {1, 2, 4});
    expect_round_payloads(collective::reduce_scatter, 8, {4, 2, 1});
    expect_round_payloads(collective::allgather, 16, {1, 2, 4, 8});
    expect_round_payloads(collective::allgather, 5, {1, 1, 2});
    expect_round_payloads(collective::allgather, 6, {1, 2, 2});
    expect_round_payloads(collective::allgather, 12, {1, 2, 4, 4});
    expect_round_payloads(collective::reduce_scatter, 12, {4, 4, 2, 1});
}

// Lu-CA's N = 8 trace: partner offsets farthest first, 4, 2, 1 (the tree of R0 is
// R0→R4; R0→R2, R4→R6; R0→R1, R2→R3, R4→R5, R6→R7).
static void pat_n8_partner_offsets_are_4_2_1(void**) {
    auto s = test::generate_ok(*pat(collective::allgather),
                               test::make_call(collective::allgather, 8, 64));
    for (const auto& rs : s.ranks) {
        std::vector<int> to, from;
        for (const auto& st : rs.steps) {
            if (st.kind == schedule::step_kind::send) {
                to.push_back((st.peer - rs.rank + 8) % 8);
            } else if (schedule::is_receive(st.kind)) {
                from.push_back((rs.rank - st.peer + 8) % 8);
            }
        }
        assert_true(to == std::vector<int>({4, 2, 1}));
        assert_true(from == std::vector<int>({4, 2, 1}));
    }
}

// Lu-CA App. A's closed form at N = 8 (3α + 7/8·M/BW) and the scale-out N = 512 (9α).
static void pat_predicts_seed_numbers(void**) {
    for (auto coll : {collective::allgather, collective::reduce_scatter}) {
        auto q    = test::cost_query_at(coll, 8);
        auto cost = pat(coll)->predict(q);
        assert_true(cost.n_alpha == 3);
        assert_true(cost.n_beta == 0.875);
        q.nranks = 512;
        assert_true(pat(coll)->predict(q).n_alpha == 9);
    }
}

LOOM_TEST_MAIN("algorithms_pat", cmocka_unit_test(verifies_over_sweep<collective::allgather>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce_scatter>),
               cmocka_unit_test(pat_counts_equal_closed_forms),
               cmocka_unit_test(pat_n8_round_payload_grows_1_2_4_blocks),
               cmocka_unit_test(pat_n8_partner_offsets_are_4_2_1),
               cmocka_unit_test(pat_predicts_seed_numbers))
