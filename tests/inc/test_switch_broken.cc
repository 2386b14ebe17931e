// SPDX-License-Identifier: Apache-2.0
// A member gone without leaving breaks its group (switch_node.hh, "A broken group"): the
// members still there fail at once with LOOM_ERR_PEER_FAILURE naming who is gone, not at
// their collective's deadline (10 s here) with a timeout that names nobody.
//   a_rank_that_vanishes_fails_the_others_at_once   one loom-switch, three ranks; rank 2
//       closes its link without leaving after two all-reduces; ranks 0 and 1, in their third,
//       fail within 3 s, naming member 2
//   a_killed_leaf_fails_every_rank_at_once          a root and two leaves (real processes),
//       four ranks; leaf 1 is SIGKILLed while they run all-reduces; the ranks under leaf 0
//       fail within 3 s naming the root's member that is gone (its nack came down the
//       tree), those under leaf 1 because their node closed; the root counts the group
//       broken
#include <signal.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "switch_harness.hh"
#include "test_case.hh"

using namespace loom;
using namespace loom::inc;
using namespace loom::inc::test;

namespace {

constexpr size_t count    = 3000;
constexpr size_t steps_n  = 4000;  // more than run in the test's time: the break ends them
constexpr double prompt_s = 3;     // "at once": well inside the client's 10 s deadline

// `n` all-reduces of `in` into `out`, seq 1..n.
std::vector<step> allreduces(const std::vector<int32_t>& in, std::vector<int32_t>& out) {
    std::vector<step> s(steps_n);
    for (size_t i = 0; i < steps_n; ++i) {
        s[i] = {uint32_t(i + 1), LOOM_INT32, {}, in.data(), out.data(), count};
    }
    return s;
}

void expect_broken(const status& st, double failed_at, double gone_at, const char* naming,
                   uint32_t rank) {
    std::printf("# rank %u: %.3f s after the loss: %s\n", rank, failed_at - gone_at,
                st.to_string().c_str());
    assert_int_equal(st.code(), LOOM_ERR_PEER_FAILURE);
    assert_non_null(std::strstr(st.message().c_str(), naming));
    assert_true(failed_at - gone_at < prompt_s);
}

void a_rank_that_vanishes_fails_the_others_at_once(void**) {
    switch_proc s = start_switch({"--listen", fresh_address(false)});
    std::vector<std::vector<int32_t>> in(3, std::vector<int32_t>(count, 1)),
        out(3, std::vector<int32_t>(count));
    std::vector<double> failed_at(3);
    double gone_at = 0;  // written by rank 2's thread, read after run_ranks joined it
    auto res       = run_ranks(3, [&](uint32_t r) {
        status st    = run_rank(s.address, 5, 6, r, flat_join(3, 2), allreduces(in[r], out[r]), {},
                             r == 2 ? 2 : SIZE_MAX);
        failed_at[r] = now_s();
        if (r == 2) {
            gone_at = now_s();
        }
        return st;
    });
    assert_true(res[2].is_ok());
    for (uint32_t r = 0; r < 2; ++r) {
        expect_broken(res[r], failed_at[r], gone_at, "member 2", r);
    }
    std::string out_text = stop_cleanly(s);
    assert_int_equal(stat_value(out_text, "groups_broken"), 1);
}

void a_killed_leaf_fails_every_rank_at_once(void**) {
    switch_proc root    = start_switch({"--listen", fresh_address(false)});
    switch_proc leaf[2] = {
        start_switch({"--listen", fresh_address(false), "--parent", root.address}),
        start_switch({"--listen", fresh_address(false), "--parent", root.address})};
    std::vector<std::vector<int32_t>> in(4, std::vector<int32_t>(count, 1)),
        out(4, std::vector<int32_t>(count));
    std::vector<double> failed_at(4);
    double killed_at = 0;
    auto res         = run_ranks(
                4,
                [&](uint32_t r) {
            join_request j;
            j.members = 4, j.expected = 2, j.slots = 2;
            j.parent_members = 2, j.parent_index = r / 2;
            status st    = run_rank(leaf[r / 2].address, 7, 8, r, j, allreduces(in[r], out[r]));
            failed_at[r] = now_s();
            return st;
        },
                [&] {
            // Once the root has completed some all-reduces, leaf 1 dies.
            (void)wait_for_stat(root.address, "results", 20);
            killed_at = now_s();
            ::kill(leaf[1].pid, SIGKILL);
        });
    for (uint32_t r = 0; r < 2; ++r) {
        expect_broken(res[r], failed_at[r], killed_at, "is gone", r);
    }
    for (uint32_t r = 2; r < 4; ++r) {
        expect_broken(res[r], failed_at[r], killed_at, "closed", r);
    }
    std::string out_text = stop_cleanly(root);
    assert_int_equal(stat_value(out_text, "groups_broken"), 1);
    out_text = stop_cleanly(leaf[0]);
    assert_int_equal(stat_value(out_text, "groups_broken"), 1);
}

}  // namespace

LOOM_SWITCH_TEST_MAIN("inc_switch_broken",
                      LOOM_CASE(a_rank_that_vanishes_fails_the_others_at_once,
                                a_rank_that_vanishes_fails_the_others_at_once(nullptr)),
                      LOOM_CASE(a_killed_leaf_fails_every_rank_at_once,
                                a_killed_leaf_fails_every_rank_at_once(nullptr)));
