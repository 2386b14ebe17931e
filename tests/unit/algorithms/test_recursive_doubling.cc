// SPDX-License-Identifier: Apache-2.0
// Recursive-doubling family: verified over the sweep; counted rounds and bytes equal
// the stated closed forms for powers of two and for the fold / dissemination forms of other
// N, under both port models; the partners follow the documented patterns; Lu-CA B.1 / B.4 at
// N = 4 (2α + 2·M/BW; 2α + 0.75·M/BW).
#include <string>
#include <vector>

#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm& algo(collective coll) {
    return test::find_algorithm(
        coll, coll == collective::reduce_scatter ? "recursive-halving" : "recursive-doubling");
}

template <collective C>
void verifies_over_sweep(void**) {
    test::expect_clean_sweep(algo(C));
}

// Counted rounds == n_alpha; edge bytes (per-edge) and port bytes (single-port) == n_beta·M.
template <collective C>
void counts_equal_closed_forms(void**) {
    for (int n : test::ranks_up_to(40, {48, 63, 64, 96, 100, 128})) {
        auto c = test::make_call(C, n, int64_t{n} * 64);  // N divides the count
        test::expect_counts_equal_stated(algo(C), c, c.count * 4.0);
    }
}

static void expect_cost(collective coll, int n, double n_alpha, double n_beta) {
    test::expect_stated_cost(algo(coll), n, n_alpha, n_beta);
}

// Lu-CA B.1 (N=4: 2α + 2·M/BW) and the fold's (⌊log2N⌋+2)(α + M/BW) for other N.
static void recursive_doubling_allreduce_closed_form_values(void**) {
    expect_cost(collective::allreduce, 1, 0, 0);
    expect_cost(collective::allreduce, 2, 1, 1);
    expect_cost(collective::allreduce, 4, 2, 2);
    expect_cost(collective::allreduce, 64, 6, 6);
    expect_cost(collective::allreduce, 3, 3, 3);
    expect_cost(collective::allreduce, 6, 4, 4);
    expect_cost(collective::allreduce, 100, 8, 8);
}

// Lu-CA B.4 (N=4: 2α + 0.75·M/BW), and ⌈log2N⌉α + (N-1)/N·M/BW for every N.
static void recursive_doubling_allgather_reduce_scatter_closed_form_values(void**) {
    for (auto coll : {collective::allgather, collective::reduce_scatter}) {
        expect_cost(coll, 1, 0, 0);
        expect_cost(coll, 4, 2, 0.75);
        expect_cost(coll, 5, 3, 0.8);
        expect_cost(coll, 6, 3, 5.0 / 6);
        expect_cost(coll, 64, 6, 63.0 / 64);
    }
}

// The peers of rank r's sends, in schedule order.
static std::vector<int> send_peers(collective coll, int n, int r) {
    auto s = test::generate_ok(algo(coll), test::make_call(coll, n, int64_t{n} * 8));
    std::vector<int> peers;
    for (const auto& st : test::sends_of(s.ranks[r])) {
        peers.push_back(st.peer);
    }
    return peers;
}

static void expect_peers(collective coll, int n, int r, const std::vector<int>& want) {
    auto got = send_peers(coll, n, r);
    if (got != want) {
        std::string g, w;
        for (int p : got) {
            g += std::to_string(p) + " ";
        }
        for (int p : want) {
            w += std::to_string(p) + " ";
        }
        LOOM_FAIL(std::string(schedule::collective_name(coll)) + " N=" + std::to_string(n) +
                  " rank " + std::to_string(r) + " sends to [" + g + "], expected [" + w + "]");
    }
}

// N = 2^k: XOR partners, all-gather at distance 1, 2, 4; reduce-scatter 4, 2, 1 (Ring-Tree order).
static void recursive_doubling_power_of_two_uses_butterfly_partners(void**) {
    for (int r = 0; r < 8; ++r) {
        expect_peers(collective::allreduce, 8, r, {r ^ 1, r ^ 2, r ^ 4});
        expect_peers(collective::allgather, 8, r, {r ^ 1, r ^ 2, r ^ 4});
        expect_peers(collective::reduce_scatter, 8, r, {r ^ 4, r ^ 2, r ^ 1});
    }
}

// Other N: all-gather sends to r-1, r-2, r-4 (mod N), reduce-scatter to r+4, r+2, r+1.
static void recursive_doubling_other_n_uses_dissemination_partners(void**) {
    for (int r = 0; r < 6; ++r) {
        expect_peers(collective::allgather, 6, r, {(r + 5) % 6, (r + 4) % 6, (r + 2) % 6});
        expect_peers(collective::reduce_scatter, 6, r, {(r + 4) % 6, (r + 2) % 6, (r + 1) % 6});
    }
}

// The fold at N = 6 (N' = 4, two pairs): ranks 1 and 3 only hand their vector to 0 and 2 and
// get the result back; 0, 2, 4, 5 run the butterfly as virtual ranks 0..3; no rank ever talks
// to two peers in one round (so single-port = per-edge).
static void recursive_doubling_allreduce_folds_other_n(void**) {
    expect_peers(collective::allreduce, 6, 1, {0});
    expect_peers(collective::allreduce, 6, 3, {2});
    expect_peers(collective::allreduce, 6, 0, {2, 4, 1});
    expect_peers(collective::allreduce, 6, 2, {0, 5, 3});
    expect_peers(collective::allreduce, 6, 4, {5, 0});
    expect_peers(collective::allreduce, 6, 5, {4, 2});
    for (int n : {3, 6, 7, 12, 24}) {
        auto st = test::expect_verifies(algo(collective::allreduce),
                                        test::make_call(collective::allreduce, n, n * 16));
        for (const auto& rs : st.per_rank) {
            assert_int_equal(rs.max_concurrent_peers, 1);
        }
    }
}

// Channels run the algorithm on slices with stacked scratch (registry.cc): still exact.
static void recursive_doubling_allreduce_verifies_with_channels(void**) {
    test::expect_verifies_with_channels(algo(collective::allreduce));
}

using enum collective;

LOOM_TEST_MAIN("algorithms_recursive_doubling", cmocka_unit_test(verifies_over_sweep<allreduce>),
               cmocka_unit_test(verifies_over_sweep<allgather>),
               cmocka_unit_test(verifies_over_sweep<reduce_scatter>),
               cmocka_unit_test(counts_equal_closed_forms<allreduce>),
               cmocka_unit_test(counts_equal_closed_forms<allgather>),
               cmocka_unit_test(counts_equal_closed_forms<reduce_scatter>),
               cmocka_unit_test(recursive_doubling_allreduce_closed_form_values),
               cmocka_unit_test(recursive_doubling_allgather_reduce_scatter_closed_form_values),
               cmocka_unit_test(recursive_doubling_power_of_two_uses_butterfly_partners),
               cmocka_unit_test(recursive_doubling_other_n_uses_dissemination_partners),
               cmocka_unit_test(recursive_doubling_allreduce_folds_other_n),
               cmocka_unit_test(recursive_doubling_allreduce_verifies_with_channels))
