// SPDX-License-Identifier: Apache-2.0
// Sendrecv direct: verified over the sweep and every (root, peer) pair of small
// groups; one message of M bytes in one round (Lu-CA §8: α + M/BW), nothing when root == peer.
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

namespace {

const algorithms::algorithm* direct() {
    return &test::find_algorithm(collective::sendrecv, "direct");
}

algorithms::call make_call(int n, int64_t count, int root, int peer) {
    auto c = test::make_call(collective::sendrecv, n, count, root);
    c.peer = peer;
    return c;
}

}  // namespace

static void sendrecv_direct_verifies_over_sweep(void**) {
    test::expect_clean_sweep(*direct());
}

// Every ordered pair, root == peer included, for N up to 9, and a sample up to 64: the
// counts equal α + M/BW (or 0 for a local copy) under both port models, and predict agrees
// exactly, including 0 for root == peer.
static void sendrecv_direct_counts_equal_closed_form(void**) {
    for (int n = 1; n <= 64; n += n < 9 ? 1 : 11) {
        for (int root = 0; root < n; ++root) {
            for (int peer = 0; peer < n; ++peer) {
                auto c      = make_call(n, 1000, root, peer);
                auto st     = test::expect_verifies(*direct(), c);
                double m    = 4000;
                bool moving = root != peer;
                if (st.rounds != (moving ? 1 : 0) || st.edge_bytes != (moving ? m : 0) ||
                    st.port_bytes != st.edge_bytes) {
                    LOOM_FAIL(test::describe_call(*direct(), c) + ": counted " +
                              std::to_string(st.rounds) + " rounds, " +
                              std::to_string(st.edge_bytes) + " B");
                }
                for (auto ports :
                     {algorithms::port_model::per_edge, algorithms::port_model::single_port}) {
                    auto cost = direct()->predict(algorithms::query_for(c, m, ports));
                    assert_true(cost.n_alpha == (moving ? 1 : 0));
                    assert_true(cost.n_beta == (moving ? 1 : 0));
                    assert_true(st.rounds == cost.n_alpha && st.edge_bytes == cost.n_beta * m);
                }
            }
        }
    }
}

// Only the two ends have steps: a send on the root, a receive on the peer (one local copy
// when they coincide), and the other ranks stay idle.
static void sendrecv_direct_involves_only_root_and_peer(void**) {
    for (auto [root, peer] : {std::pair{4, 1}, std::pair{2, 2}}) {
        auto s = test::generate_ok(*direct(), make_call(6, 77, root, peer));
        for (int r = 0; r < 6; ++r) {
            const auto& steps = s.ranks[r].steps;
            if (r != root && r != peer) {
                assert_int_equal(steps.size(), 0);
                continue;
            }
            assert_int_equal(steps.size(), 1);
            auto want = root == peer ? schedule::step_kind::local_copy
                        : r == root  ? schedule::step_kind::send
                                     : schedule::step_kind::recv;
            assert_true(steps[0].kind == want);
            if (root != peer) {
                assert_int_equal(steps[0].peer, r == root ? peer : root);
            }
        }
    }
}

LOOM_TEST_MAIN("algorithms_sendrecv", cmocka_unit_test(sendrecv_direct_verifies_over_sweep),
               cmocka_unit_test(sendrecv_direct_counts_equal_closed_form),
               cmocka_unit_test(sendrecv_direct_involves_only_root_and_peer))
