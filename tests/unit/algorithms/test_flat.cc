// SPDX-License-Identifier: Apache-2.0
// Flat (node-local) schedules: every primitive flat serves verifies over the sweep
// on star:N, 300 calls each (the verifier's in-network semantics: one contributor's value per
// aggregation slot, pulled as is, which is what all-gather's and all-to-all's per-block slots
// mean); the all-gather and all-to-all schedules have the shape algorithms/flat.cc states (one push
// per block sent, one pull per block received, one slot per (writer, reader) block, the own
// block a local copy); the stated costs are α_flat + (N−1)/N·M/BW for both.
// The runtime side (the segment, the offload) is api_flat's.
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm& flat(collective c) {
    return test::find_algorithm(c, "flat");
}

static void flat_verifies_over_sweep(void**) {
    for (collective c : {collective::allreduce, collective::reduce, collective::broadcast,
                         collective::allgather, collective::alltoall}) {
        test::expect_clean_sweep(flat(c), {}, test::applies::everywhere, 280);
    }
}

// All-gather at N = 5, count 13 (uneven blocks): rank r pushes its block into slot r and
// pulls every other rank's block from that rank's slot into the block's place.
static void allgather_pushes_once_and_pulls_every_other_block(void**) {
    const int n = 5;
    auto c      = test::make_call(collective::allgather, n, 13);
    auto s      = test::generate_ok(flat(collective::allgather), c);
    for (const auto& rs : s.ranks) {
        int pushes = 0, copies = 0;
        std::vector<int> pulled;
        for (const auto& st : rs.steps) {
            if (st.kind == schedule::step_kind::inc_push) {
                ++pushes;
                assert_int_equal(st.tag, rs.rank);
                assert_true(st.src == schedule::in(0, schedule::block_size(13, n, rs.rank)));
            } else if (st.kind == schedule::step_kind::inc_pull) {
                const int w = int(st.tag);
                pulled.push_back(w);
                assert_true(st.dst == schedule::out(schedule::block_offset(13, n, w),
                                                    schedule::block_size(13, n, w)));
            } else if (st.kind == schedule::step_kind::local_copy) {
                ++copies;
            }
        }
        assert_int_equal(pushes, 1);
        assert_int_equal(copies, 1);
        assert_int_equal(int(pulled.size()), n - 1);
        for (int w : pulled) {
            assert_true(w != rs.rank);
        }
    }
}

// All-to-all at N = 4, count 3: rank i pushes block j into slot i·N + j, and pulls slot
// w·N + i into output block w, for every other rank.
static void alltoall_slots_are_writer_times_n_plus_reader(void**) {
    const int n = 4;
    auto c      = test::make_call(collective::alltoall, n, 3);
    auto s      = test::generate_ok(flat(collective::alltoall), c);
    for (const auto& rs : s.ranks) {
        int pushes = 0, pulls = 0;
        for (const auto& st : rs.steps) {
            if (st.kind == schedule::step_kind::inc_push) {
                ++pushes;
                const int j = int(st.tag) - rs.rank * n;
                assert_true(j >= 0 && j < n && j != rs.rank);
                assert_true(st.src == schedule::in(j * 3, 3));
            } else if (st.kind == schedule::step_kind::inc_pull) {
                ++pulls;
                const int w = int(st.tag) / n;
                assert_int_equal(int(st.tag) % n, rs.rank);
                assert_true(w != rs.rank);
                assert_true(st.dst == schedule::out(w * 3, 3));
            }
        }
        assert_int_equal(pushes, n - 1);
        assert_int_equal(pulls, n - 1);
    }
}

static void copy_collectives_cost_one_hand_off_and_n_minus_1_over_n(void**) {
    for (collective c : {collective::allgather, collective::alltoall}) {
        for (int n : {1, 2, 4, 8}) {
            auto k = flat(c).predict(test::cost_query_at(c, n));
            assert_true(k.n_alpha == 0);
            assert_true(k.n_alpha_flat == 1);
            assert_true(k.n_beta == double(n - 1) / n);
        }
    }
}

LOOM_TEST_MAIN("algorithms_flat", cmocka_unit_test(flat_verifies_over_sweep),
               cmocka_unit_test(allgather_pushes_once_and_pulls_every_other_block),
               cmocka_unit_test(alltoall_slots_are_writer_times_n_plus_reader),
               cmocka_unit_test(copy_collectives_cost_one_hand_off_and_n_minus_1_over_n))
