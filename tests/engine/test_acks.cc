// SPDX-License-Identifier: Apache-2.0
// Which schedules acknowledge early (engine.hh one_way_roles_cycle): none of the catalogue's,
// at any N, root or count tried, so their ranks keep acknowledging on completion (a mismatch
// downstream fails the ranks upstream: api_failures); a hand-written ring broadcast whose last
// rank sends back to the root does, and its plans say so. That it then completes on real
// ranks is run_user_schedule.sh's case.
#include <string>
#include <vector>

#include "algorithms/algorithm.hh"
#include "engine/engine.hh"
#include "engine/plan.hh"
#include "schedule/schedule.hh"
#include "test_main.hh"
#include "value_or_fail.hh"

using namespace loom;

namespace {

void no_catalogue_schedule_has_a_cycle_of_one_way_roles(void**) {
    int schedules = 0;
    for (int n = 1; n <= 9; ++n) {
        for (const auto* a : algorithms::catalogue()) {
            for (int64_t count : {int64_t{0}, int64_t{5}, int64_t{1000}}) {
                for (int root : {0, n / 2, n - 1}) {
                    algorithms::call c;
                    c.coll = a->primitive, c.nranks = n, c.count = count, c.root = root;
                    c.peer = (root + 1) % n;
                    c.topo = topology::shape::star(n);
                    if (a->topology_aware) {
                        c.topo = *topology::shape::parse("ring:" + std::to_string(n));
                    }
                    if (!algorithms::check_call(*a, c)) {
                        continue;
                    }
                    auto s = test::value_or_fail(algorithms::generate(*a, c));
                    if (engine::one_way_roles_cycle(s)) {
                        LOOM_FAIL(std::string(a->name) + " " +
                                  std::string(schedule::collective_name(c.coll)) +
                                  " N=" + std::to_string(n) + " root=" + std::to_string(root) +
                                  ": one-way roles form a cycle");
                    }
                    ++schedules;
                }
            }
        }
    }
    assert_true(schedules > 300);
}

void a_ring_broadcast_back_to_its_root_acknowledges_early(void**) {
    const char* text =
        "loom-schedule 1\n"
        "collective=broadcast ranks=3 count=3 root=0 peer=1 dtype_size=4 segments=1 "
        "channels=1 algorithm=closed-ring topology=star:3\n"
        "rank 0 scratch=0\n"
        "  0 local_copy dst=out@0+3 src=in@0+3\n"
        "  1 send peer=1 src=in@0+3\n"
        "  2 recv peer=2 dst=out@0+1 deps=0\n"
        "rank 1 scratch=0\n"
        "  0 recv peer=0 dst=out@0+3\n"
        "  1 send peer=2 src=out@0+3 deps=0\n"
        "rank 2 scratch=0\n"
        "  0 recv peer=1 dst=out@0+3\n"
        "  1 send peer=0 src=out@0+1 deps=0\n";
    auto s = test::value_or_fail(schedule::parse_text(text));
    assert_true(engine::one_way_roles_cycle(s));
    // Rank 0 waits for 1, 1 for 2, 2 for 0; without rank 2's send back there is no cycle.
    schedule::schedule open = s;
    open.ranks[2].steps.pop_back();
    open.ranks[0].steps.pop_back();
    assert_false(engine::one_way_roles_cycle(open));
    auto p = test::value_or_fail(engine::compile(s.info, s.ranks[1], LOOM_FLOAT32, 1, true));
    assert_true(p->acks_when_steps_done);
    assert_int_equal(p->ack_from.size(), 1);
    assert_int_equal(p->ack_from[0], 2);
}

}  // namespace

LOOM_TEST_MAIN("engine_acks", cmocka_unit_test(no_catalogue_schedule_has_a_cycle_of_one_way_roles),
               cmocka_unit_test(a_ring_broadcast_back_to_its_root_acknowledges_early))
