// SPDX-License-Identifier: Apache-2.0
// Scatter + all-gather broadcast (scatter_allgather.cc): verified over the sweep, with
// segments and channels; its counted rounds and bytes equal (L+N-1)α + 2(N-1)/N·M/BW under
// both port models for every N from 1 to 70; the N = 8 scatter moves the blocks the header
// names (4, 2, 1 from the root, largest first); uneven and empty blocks keep the rounds.
#include "algorithms/util.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

namespace {

const algorithms::algorithm& algo() {
    return test::find_algorithm(collective::broadcast, "scatter-allgather");
}

}  // namespace

static void verifies_over_sweep(void**) {
    test::expect_clean_sweep(algo());
}

// P is not used, but a call that asks for segments must still give a correct schedule; the
// same counts as the sweep, including count < P and counts N does not divide.
static void verifies_with_segments_and_channels(void**) {
    int verified = 0;
    for (int n : test::standard_ranks()) {
        for (int p : {2, 3, 8}) {
            for (int64_t count :
                 {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n}, int64_t{1001}}) {
                for (int root : {0, n - 1, n / 2}) {
                    test::expect_verifies(
                        algo(), test::make_call(collective::broadcast, n, count, root, p));
                    ++verified;
                }
            }
        }
    }
    assert_true(verified > 800);
    test::expect_verifies_with_channels(algo());
}

// The counted rounds and bytes equal the form, independently of predict(): L + N - 1 rounds,
// 2(N-1)/N·M on the busiest edge and the busiest port alike; predict agrees (both port
// models). Every N from 1 to 70, three roots, counts N divides.
static void counts_equal_the_form_for_every_n(void**) {
    for (int n = 1; n <= 70; ++n) {
        for (int root : {0, n / 3, n - 1}) {
            auto c       = test::make_call(collective::broadcast, n, int64_t{n} * 12, root);
            double m     = static_cast<double>(c.count) * c.dtype_size;
            auto st      = test::expect_counts_equal_stated(algo(), c, m);
            int rounds   = n == 1 ? 0 : algorithms::ceil_log2(n) + n - 1;
            double bytes = 2.0 * (n - 1) / n * m;
            assert_int_equal(st.rounds, rounds);
            assert_true(test::same_bytes(st.edge_bytes, bytes));
            assert_true(test::same_bytes(st.port_bytes, bytes));
        }
    }
}

// Literal numbers, so a wrong predict() cannot hide a wrong schedule: N = 4 is 2 + 3 = 5
// rounds and 1.5·M; N = 5 is 3 + 4 = 7 rounds and 1.6·M (the first scatter round moves the
// one block of R4 only).
static void n4_and_n5_numbers(void**) {
    for (auto [n, rounds, factor] : {std::tuple{4, 5, 1.5}, std::tuple{5, 7, 1.6}}) {
        auto c   = test::make_call(collective::broadcast, n, 600, 1);
        auto st  = test::expect_verifies(algo(), c);
        double m = 600 * 4.0;
        assert_int_equal(st.rounds, rounds);
        assert_true(test::same_bytes(st.edge_bytes, factor * m));
        assert_true(test::same_bytes(st.port_bytes, factor * m));
    }
}

// N = 8 from R3 (v = rank - 3): the root sends 4 blocks to v = 4, then 2 to v = 2, then 1 to
// v = 1, in that order; v = 4 passes 2 blocks to v = 6 and 1 to v = 5; every scatter edge
// carries its blocks once, and the ring edges v → v+1 one block per step besides; the ring
// is open at the root (it feeds v = 1 from its input, v = 7 sends nothing back).
static void n8_scatter_is_the_halving_tree(void**) {
    const int n = 8, root = 3;
    auto c     = test::make_call(collective::broadcast, n, 800, root);
    auto s     = test::generate_ok(algo(), c);
    auto abs   = [&](int v) { return (v + root) % n; };
    auto sends = test::sends_of(s.ranks[root]);
    // Root: three scatter sends, then its N - 1 ring sends to v = 1.
    assert_int_equal(sends.size(), 3 + (n - 1));
    const int expect_peer[]    = {abs(4), abs(2), abs(1)};
    const int64_t expect_len[] = {400, 200, 100};
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(sends[i].peer, expect_peer[i]);
        assert_int_equal(sends[i].src.count, expect_len[i]);
        assert_int_equal(sends[i].src.offset, expect_len[i]);  // blocks [m, 2m): offset m·100
    }
    auto v4 = test::sends_of(s.ranks[abs(4)]);
    assert_true(v4.size() >= 2);
    assert_int_equal(v4[0].peer, abs(6));
    assert_int_equal(v4[0].src.count, 200);
    assert_int_equal(v4[1].peer, abs(5));
    assert_int_equal(v4[1].src.count, 100);
    // Pair bytes: scatter plus ring (root → v1: its scatter block and N-1 ring blocks).
    auto st = test::verify_pairs(algo(), c);
    assert_int_equal(st.pair_bytes.at(test::pair_key(abs(0), abs(4))), 400 * 4);
    assert_int_equal(st.pair_bytes.at(test::pair_key(abs(0), abs(1))), (100 + 7 * 100) * 4);
    // The ring is open at the root: the last rank sends nothing back, nobody sends to the root.
    for (int v = 1; v < n; ++v) {
        assert_true(st.pair_bytes.count(test::pair_key(abs(v), abs(0))) == 0);
    }
}

// Uneven blocks (count % N ≠ 0) and empty ones (count < N) change bytes, never the rounds:
// L + N - 1 for every count.
static void uneven_and_empty_blocks_keep_the_rounds(void**) {
    for (int n : test::standard_ranks()) {
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n} * 7 + 3}) {
            auto st = test::expect_verifies(
                algo(), test::make_call(collective::broadcast, n, count, n / 2));
            assert_int_equal(st.rounds, n == 1 ? 0 : algorithms::ceil_log2(n) + n - 1);
        }
    }
}

LOOM_TEST_MAIN("algorithms_scatter_allgather", cmocka_unit_test(verifies_over_sweep),
               cmocka_unit_test(verifies_with_segments_and_channels),
               cmocka_unit_test(counts_equal_the_form_for_every_n),
               cmocka_unit_test(n4_and_n5_numbers),
               cmocka_unit_test(n8_scatter_is_the_halving_tree),
               cmocka_unit_test(uneven_and_empty_blocks_keep_the_rounds))
