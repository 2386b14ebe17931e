// SPDX-License-Identifier: Apache-2.0
// Binomial family: verified over the sweep and over pipelined calls; its counted
// rounds and bytes equal the closed forms stated in binomial.cc (per-edge and single-port),
// and it reproduces Lu-CA's N = 4 traces (§3.2 broadcast, §4.2 reduce: 2 rounds, 2·M).
#include "algorithms/util.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

namespace {

const algorithms::algorithm* family_member(collective coll) {
    return &test::find_algorithm(coll,
                                 coll == collective::allreduce ? "reduce-broadcast" : "binomial");
}

// The sweep runs P = 1; this covers P > 1 with the same counts, including count < P and
// counts P does not divide, and every kind of root.
void expect_pipelined_sweep(collective coll) {
    const auto* a = family_member(coll);
    int verified  = 0;
    for (int n : test::standard_ranks()) {
        for (int p : {2, 3, 8}) {
            for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n},
                                  int64_t{p - 1}, int64_t{1000003}}) {
                for (int root : {0, n - 1, n / 2}) {
                    test::expect_verifies(*a, test::make_call(coll, n, count, root, p));
                    ++verified;
                }
            }
        }
    }
    assert_true(verified > 1000);
}

// Counted vs stated, under both port models, for one call (count divisible by P).
schedule::schedule_stats expect_counts(const algorithms::algorithm& a, const algorithms::call& c) {
    return test::expect_counts_equal_stated(a, c, static_cast<double>(c.count) * c.dtype_size);
}

// A count every P used below divides (1..8 and 16).
constexpr int64_t divisible_count = 16 * 9 * 5 * 7 * 4;

}  // namespace

template <collective C>
void verifies_over_sweep(void**) {
    test::expect_clean_sweep(*family_member(C));
}

static void binomial_pipelined_verifies_for_any_n_count_root(void**) {
    for (auto coll : {collective::broadcast, collective::reduce, collective::allreduce}) {
        expect_pipelined_sweep(coll);
    }
}

// P = 1 is the text's formula, independently of predict(): ⌈log2N⌉ rounds and ⌈log2N⌉·M
// for broadcast and reduce, twice that for the allreduce, the same under one port; predict
// agrees. Every N from 1 to 70 and every root of some of them.
static void binomial_p1_counts_equal_text_formulas(void**) {
    for (auto coll : {collective::broadcast, collective::reduce, collective::allreduce}) {
        const auto* a = family_member(coll);
        for (int n = 1; n <= 70; ++n) {
            for (int root : {0, n / 3, n - 1}) {
                auto c     = test::make_call(coll, n, int64_t{n} * 12, root, 1);
                auto st    = expect_counts(*a, c);
                int phases = coll == collective::allreduce ? 2 : 1;
                int l      = algorithms::ceil_log2(n);
                double m   = c.count * 4.0;
                assert_int_equal(st.rounds, phases * l);
                assert_true(st.edge_bytes == phases * l * m);
                assert_true(st.port_bytes == phases * l * m);
            }
        }
    }
}

// P > 1: the verifier's counts equal the stated exact finite-P forms, per-edge and
// single-port, for every N of the standard set and several roots.
static void binomial_pipelined_counts_equal_stated_forms(void**) {
    for (auto coll : {collective::broadcast, collective::reduce, collective::allreduce}) {
        const auto* a = family_member(coll);
        for (int n : test::standard_ranks()) {
            for (int p : {2, 3, 4, 5, 7, 8, 16}) {
                for (int root : {0, n / 2}) {
                    expect_counts(*a, test::make_call(coll, n, divisible_count, root, p));
                }
            }
        }
    }
}

// The pipelined forms against literal numbers (so a wrong predict() cannot hide a wrong
// schedule). N = 8, P = 8, L = 3: broadcast and reduce 10 rounds, 10/8·M per-edge, 3·M
// single-port (the root's port carries M to/from each of 3 children: docs/references.md#port-model,
// C.5); allreduce 13 rounds, 13/8·M per-edge, (6 - 15/8)·M = 33/8·M single-port (P > 2L+1, S =
// L(P-L) = 15).
static void binomial_n8_p8_pipelined_numbers(void**) {
    double m = divisible_count * 4.0;
    for (auto coll : {collective::broadcast, collective::reduce, collective::allreduce}) {
        auto c  = test::make_call(coll, 8, divisible_count, 3, 8);
        auto st = expect_counts(*family_member(coll), c);
        bool ar = coll == collective::allreduce;
        assert_int_equal(st.rounds, ar ? 13 : 10);
        assert_true(st.edge_bytes == (ar ? 13 : 10) * m / 8);
        assert_true(st.port_bytes == (ar ? 33.0 / 8 : 3.0) * m);
    }
}

// The transfers of a verified call are exactly `pairs` (from, to), each carrying `bytes`.
static void expect_pair_bytes(const schedule::schedule_stats& st,
                              const std::vector<std::pair<int, int>>& pairs, int64_t bytes) {
    assert_int_equal(st.pair_bytes.size(), pairs.size());
    for (auto [from, to] : pairs) {
        auto it = st.pair_bytes.find(test::pair_key(from, to));
        assert_true(it != st.pair_bytes.end());
        assert_int_equal(it->second, bytes);
    }
}

// Lu-CA §3.2, N = 4 from R0: R0→R1, then R0→R2 and R1→R3; 2 rounds, 2·M. The pairs, rank 0's
// send order (R1 before R2) and 2 rounds leave exactly the printed placement.
static void binomial_broadcast_n4_is_f000_trace(void**) {
    const auto* a = family_member(collective::broadcast);
    auto c        = test::make_call(collective::broadcast, 4, 1000);
    auto st       = test::verify_pairs(*a, c);
    double m      = 4000;
    assert_int_equal(st.rounds, 2);
    assert_true(st.edge_bytes == 2 * m);
    expect_pair_bytes(st, {{0, 1}, {0, 2}, {1, 3}}, 4000);
    auto rank0_sends = test::sends_of(test::generate_ok(*a, c).ranks[0]);
    assert_int_equal(rank0_sends.size(), 2);
    assert_true(rank0_sends[0].peer == 1 && rank0_sends[1].peer == 2);
}

// Lu-CA §4.2, N = 4 to R0: R1→R0 and R3→R2, then R2→R0 (R3 under R2, not under R1 as in
// the broadcast: docs/references.md#binomial-shapes); 2 rounds, 2·M.
static void binomial_reduce_n4_is_f000_trace(void**) {
    const auto* a = family_member(collective::reduce);
    auto c        = test::make_call(collective::reduce, 4, 1000);
    auto st       = test::verify_pairs(*a, c);
    assert_int_equal(st.rounds, 2);
    assert_true(st.edge_bytes == 2 * 4000.0);
    expect_pair_bytes(st, {{1, 0}, {3, 2}, {2, 0}}, 4000);
    auto s = test::generate_ok(*a, c);
    std::vector<int> rank0_receives;
    for (const auto& step : s.ranks[0].steps) {
        if (schedule::is_receive(step.kind)) {
            rank0_receives.push_back(step.peer);
        }
    }
    assert_true((rank0_receives == std::vector<int>{1, 2}));
}

// The root is relabelled, not fixed: broadcast from R2 on N = 4 is the §3.2 tree shifted
// by 2 (R2→R3, then R2→R0 and R3→R1).
static void binomial_broadcast_relabels_the_root(void**) {
    const auto* a = family_member(collective::broadcast);
    auto st       = test::verify_pairs(*a, test::make_call(collective::broadcast, 4, 10, 2));
    expect_pair_bytes(st, {{2, 3}, {2, 0}, {3, 1}}, 40);
}

LOOM_TEST_MAIN("algorithms_binomial",
               cmocka_unit_test(binomial_pipelined_verifies_for_any_n_count_root),
               cmocka_unit_test(binomial_p1_counts_equal_text_formulas),
               cmocka_unit_test(binomial_pipelined_counts_equal_stated_forms),
               cmocka_unit_test(binomial_n8_p8_pipelined_numbers),
               cmocka_unit_test(binomial_broadcast_n4_is_f000_trace),
               cmocka_unit_test(binomial_reduce_n4_is_f000_trace),
               cmocka_unit_test(binomial_broadcast_relabels_the_root),
               cmocka_unit_test(verifies_over_sweep<collective::broadcast>),
               cmocka_unit_test(verifies_over_sweep<collective::reduce>),
               cmocka_unit_test(verifies_over_sweep<collective::allreduce>))
