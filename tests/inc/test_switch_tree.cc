// SPDX-License-Identifier: Apache-2.0
// A two-level tree of real loom-switch processes: two leaves with --parent pointing at a
// root, four ranks (two per leaf) over tcp and shm. All-reduce (int32; float32 deterministic:
// bitwise (r0 + r1) + (r2 + r3), the tree's fixed order), reduce to a rank under the other
// leaf, broadcast from rank 1: exact, also with loss and duplication in all three switches.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/reduce.hh"
#include "switch_harness.hh"
#include "test_case.hh"

using namespace loom;
using namespace loom::inc;
using namespace loom::inc::test;

namespace {

constexpr uint32_t ranks = 4;
constexpr size_t count   = 3000;

struct rank_data {
    std::vector<int32_t> in = std::vector<int32_t>(count), sum = std::vector<int32_t>(count),
                         reduced = std::vector<int32_t>(count), bcast = std::vector<int32_t>(count);
    std::vector<float> fin = std::vector<float>(count), fsum = std::vector<float>(count);
};

void run_tree(bool shm, bool lossy) {
    std::vector<std::string> loss;
    if (lossy) {
        loss = {"--drop", "0.05", "--dup", "0.05"};
    }
    auto with = [&](std::vector<std::string> a, const char* seed) {
        a.insert(a.end(), loss.begin(), loss.end());
        a.insert(a.end(), {"--seed", seed});
        return a;
    };
    switch_proc root    = start_switch(with({"--listen", fresh_address(shm)}, "1"));
    switch_proc leaf[2] = {
        start_switch(with({"--listen", fresh_address(shm), "--parent", root.address}, "2")),
        start_switch(with({"--listen", fresh_address(shm), "--parent", root.address}, "3"))};

    std::vector<rank_data> d(ranks);
    for (uint32_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < count; ++i) {
            d[r].in[i]  = int32_t(r * 7919 + i * 3) - 5000;
            d[r].fin[i] = r == 0 ? 1e8f : 3.0f + float(i % 11) * 1e-3f * float(r + 1);
        }
    }
    const uint16_t reduce_root = 3, bcast_root = 1;
    check_ranks(run_ranks(ranks, [&](uint32_t r) {
        join_request j;
        j.members = ranks, j.expected = 2, j.slots = 4, j.flags = join_deterministic;
        j.parent_members = 2, j.parent_index = r / 2;
        rank_data& m            = d[r];
        std::vector<step> steps = {
            {1, LOOM_INT32, {}, m.in.data(), m.sum.data(), count},
            {2, LOOM_FLOAT32, {}, m.fin.data(), m.fsum.data(), count},
            {3,
             LOOM_INT32,
             {flag_to_root, reduce_root, 0},
             m.in.data(),
             r == reduce_root ? m.reduced.data() : nullptr,
             count},
            {4,
             LOOM_INT32,
             {flag_from_root, bcast_root, 0},
             r == bcast_root ? m.in.data() : nullptr,
             m.bcast.data(),
             count},
        };
        return run_rank(leaf[r / 2].address, 9, 4, r, j, steps);
    }));
    auto add                = kernels::reduce_kernel(LOOM_FLOAT32, LOOM_SUM);
    std::vector<float> left = d[0].fin, right = d[2].fin;
    add(left.data(), left.data(), d[1].fin.data(), count);
    add(right.data(), right.data(), d[3].fin.data(), count);
    add(left.data(), left.data(), right.data(), count);
    for (uint32_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < count; ++i) {
            int32_t want = d[0].in[i] + d[1].in[i] + d[2].in[i] + d[3].in[i];
            assert_int_equal(d[r].sum[i], want);
            assert_int_equal(d[r].bcast[i], d[bcast_root].in[i]);
            if (r == reduce_root) {
                assert_int_equal(d[r].reduced[i], want);
            }
        }
        assert_memory_equal(d[r].fsum.data(), left.data(), count * sizeof(float));
    }
    std::string out;
    for (auto& l : leaf) {
        out = stop_cleanly(l);
        assert_int_equal(stat_value(out, "forwarded"), 4 * 3);  // 3 chunks × 4 collectives
        assert_int_equal(stat_value(out, "awaiting_parent"), 0);
    }
    out = stop_cleanly(root);
    assert_int_equal(stat_value(out, "results"), 4 * 3);
    assert_int_equal(stat_value(out, "contributions"), 2 * 4 * 3);
}

// A join asking for a parent level at a switch without --parent is refused.
void parent_level_without_parent(void**) {
    switch_proc s = start_switch({"--listen", fresh_address(false)});
    join_request j;
    j.members = 4, j.expected = 2, j.slots = 2, j.parent_members = 2;
    status st = run_rank(s.address, 1, 1, 0, j, {});
    assert_int_equal(st.code(), LOOM_ERR_NOT_SUPPORTED);
    stop_cleanly(s);
}

}  // namespace

LOOM_SWITCH_TEST_MAIN("inc_switch_tree", LOOM_CASE(tree_tcp, run_tree(false, false)),
                      LOOM_CASE(tree_shm, run_tree(true, false)),
                      LOOM_CASE(tree_tcp_lossy, run_tree(false, true)),
                      LOOM_CASE(tree_shm_lossy, run_tree(true, true)),
                      cmocka_unit_test(parent_level_without_parent))
