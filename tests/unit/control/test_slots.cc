// SPDX-License-Identifier: Apache-2.0
// fabric/control: in-network slot admission. A grant is all or nothing: with one node of the
// tree full, out of service or unknown nothing is taken and the reason names that node; a job
// over its quota is refused naming the quota; one allocation per communicator; an allocation
// runs out three periods after its last renewal and never before, freeing its slots; a node
// going out revokes the allocations that use it (named, slots freed, renewals refused until
// the lease runs out); the store keeps allocations and reads a format 1 file.
#include <unistd.h>
#include <chrono>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "control/slots.hh"
#include "control/store_file.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::control;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds period{200};

// spine over leaf0 and leaf1, 8 slots each; leaf1 has 2.
slot_nodes three_switches() {
    slot_nodes n;
    n["spine"] = {member_kind::sw, 8, ""};
    n["leaf0"] = {member_kind::sw, 8, ""};
    n["leaf1"] = {member_kind::dpu, 2, ""};
    return n;
}

grant_request ask(const std::string& job, const std::string& comm, uint32_t slots,
                  std::vector<std::string> nodes = {"spine", "leaf0", "leaf1"}) {
    return {job, comm, std::move(nodes), slots};
}

uint64_t used(const slot_table& t, const std::string& node) {
    uint64_t sum = 0;
    auto by_node = t.used_by_node();
    for (const auto& [job, n] : by_node[node]) {
        sum += n;
    }
    return sum;
}

}  // namespace

static void a_full_node_refuses_the_whole_tree_naming_it(void**) {
    slot_table t(period, 0, 64);
    slot_nodes nodes = three_switches();
    auto a           = t.grant(ask("j1", "c0", 2), nodes);
    assert_true(a.refusal == slot_refusal::none);
    assert_int_equal(a.granted.nodes.size(), 3);
    assert_true(a.granted.lease.size() >= 32);
    assert_int_equal(used(t, "leaf1"), 2);
    // leaf1 is full: nothing is taken on spine or leaf0 either.
    auto b = t.grant(ask("j2", "c0", 1), nodes);
    assert_true(b.refusal == slot_refusal::no_slots);
    assert_string_equal(b.why.c_str(),
                        "dpu leaf1 has 0 of 2 slots free (this communicator asks 1)");
    assert_int_equal(used(t, "spine"), 2);
    assert_int_equal(used(t, "leaf0"), 2);
    assert_int_equal(t.snapshot().size(), 1);
    // Without leaf1 it fits; releasing the first frees leaf1 for the whole tree.
    assert_true(t.grant(ask("j2", "c0", 1, {"spine", "leaf0"}), nodes).refusal ==
                slot_refusal::none);
    assert_true(t.release(a.granted.id));
    assert_false(t.release(a.granted.id));
    assert_true(t.grant(ask("j3", "c0", 2), nodes).refusal == slot_refusal::none);
    assert_int_equal(used(t, "spine"), 3);
}

static void unknown_out_and_empty_trees_are_refused_naming_why(void**) {
    slot_table t(period, 0, 64);
    slot_nodes nodes = three_switches();
    auto r           = t.grant(ask("j", "c", 1, {"spine", "leaf9"}), nodes);
    assert_true(r.refusal == slot_refusal::unknown_node);
    assert_non_null(strstr(r.why.c_str(), "leaf9 is not an in-network member"));
    nodes["leaf0"].out = "drained";
    r                  = t.grant(ask("j", "c", 1), nodes);
    assert_true(r.refusal == slot_refusal::out_of_service);
    assert_string_equal(r.why.c_str(), "switch leaf0 is drained");
    r = t.grant(ask("j", "c", 1, {}), nodes);
    assert_true(r.refusal == slot_refusal::no_tree);
    assert_string_equal(r.why.c_str(), "no aggregation node is up");
    assert_int_equal(t.snapshot().size(), 0);
}

static void a_job_over_its_quota_is_refused_and_one_comm_holds_one(void**) {
    slot_table t(period, 8, 64);  // 8 slots in all per job
    slot_nodes nodes = three_switches();
    assert_true(t.grant(ask("j", "c0", 1), nodes).refusal == slot_refusal::none);  // holds 3
    auto again = t.grant(ask("j", "c0", 1, {"spine"}), nodes);
    assert_true(again.refusal == slot_refusal::exists);
    auto r = t.grant(ask("j", "c1", 2, {"spine", "leaf0", "leaf1"}), nodes);  // asks 6: 9 > 8
    assert_true(r.refusal == slot_refusal::over_quota);
    assert_string_equal(
        r.why.c_str(), "job j is over its quota of 8 slots (it holds 3, this communicator asks 6)");
    assert_true(t.grant(ask("j", "c1", 1), nodes).refusal == slot_refusal::none);  // 6 <= 8
    assert_true(t.grant(ask("other", "c0", 1, {"spine"}), nodes).refusal == slot_refusal::none);
    slot_table small(period, 0, 1);
    assert_true(small.grant(ask("a", "c", 1), nodes).refusal == slot_refusal::none);
    assert_true(small.grant(ask("b", "c", 1), nodes).refusal == slot_refusal::table_full);
}

static void an_allocation_runs_out_after_three_periods_not_before(void**) {
    slot_table t(period, 0, 64);
    slot_nodes nodes = three_switches();
    auto a           = t.grant(ask("j", "c", 2), nodes);
    std::string why;
    assert_true(t.renew(a.granted.id, a.granted.lease, &why) == renew_refusal::none);
    assert_true(t.renew(a.granted.id, "other", &why) == renew_refusal::stale_lease);
    assert_true(t.renew(99, a.granted.lease, &why) == renew_refusal::unknown);
    auto start = steady::now();
    assert_int_equal(t.sweep(start + 2 * period), 0);
    assert_int_equal(used(t, "leaf1"), 2);
    assert_int_equal(t.sweep(start + 3 * period + milliseconds(5)), 1);
    assert_int_equal(used(t, "leaf1"), 0);
    assert_true(t.renew(a.granted.id, a.granted.lease, &why) == renew_refusal::unknown);
    assert_true(t.grant(ask("k", "c", 2), nodes).refusal == slot_refusal::none);
}

static void a_node_going_out_revokes_the_allocations_that_use_it(void**) {
    slot_table t(period, 0, 64);
    slot_nodes nodes = three_switches();
    auto a           = t.grant(ask("j", "c0", 1), nodes);
    auto b           = t.grant(ask("j", "c1", 1, {"spine", "leaf0"}), nodes);
    assert_int_equal(t.revoke_out(nodes), 0);
    nodes["leaf1"].out = "down";
    assert_int_equal(t.revoke_out(nodes), 1);
    assert_int_equal(t.revoke_out(nodes), 0);  // counted once
    std::string why;
    assert_true(t.renew(a.granted.id, a.granted.lease, &why) == renew_refusal::revoked);
    assert_string_equal(why.c_str(), "dpu leaf1 is down");
    assert_true(t.renew(b.granted.id, b.granted.lease, &why) == renew_refusal::none);
    assert_int_equal(used(t, "spine"), 1);  // the revoked one holds nothing
    nodes.erase("leaf0");                   // left the control plane
    assert_int_equal(t.revoke_out(nodes), 1);
    assert_true(t.renew(b.granted.id, b.granted.lease, &why) == renew_refusal::revoked);
    assert_string_equal(why.c_str(), "leaf0 left the control plane");
    // A revoked record is kept (not renewable) three periods after the job last asked.
    assert_int_equal(t.snapshot().size(), 2);
    assert_int_equal(t.sweep(steady::now() + 2 * period), 0);
    assert_int_equal(t.sweep(steady::now() + 4 * period), 2);
}

static void the_store_keeps_allocations_and_reads_format_1(void**) {
    std::string path = test::temp_path("control", "slots_state");
    slot_table t(period, 0, 64);
    slot_nodes nodes   = three_switches();
    auto a             = t.grant(ask("j", "c0", 2), nodes);
    auto b             = t.grant(ask("j", "c1", 1, {"spine"}), nodes);
    nodes["leaf1"].out = "down";
    t.revoke_out(nodes);
    stored_table table;
    member sw;
    sw.id                    = 1;
    sw.name                  = "spine";
    sw.kind                  = member_kind::sw;
    sw.slots                 = 8;
    table.members            = {sw};
    table.next_id            = 2;
    table.allocations        = t.snapshot();
    table.next_allocation_id = t.next_id();
    assert_true(save_state(path, table).is_ok());
    auto stored = load_state(path);
    assert_true(stored.is_ok());
    assert_int_equal(stored->members[0].slots, 8);
    assert_int_equal(stored->allocations.size(), 2);
    slot_table back(period, 0, 64);
    back.restore(stored->allocations, stored->next_allocation_id);
    std::string why;
    assert_true(back.renew(a.granted.id, a.granted.lease, &why) == renew_refusal::revoked);
    assert_string_equal(why.c_str(), "dpu leaf1 is down");
    assert_true(back.renew(b.granted.id, b.granted.lease, &why) == renew_refusal::none);
    assert_int_equal(back.sweep(steady::now() + 2 * period), 0);  // a fresh grace
    auto next = back.grant(ask("k", "c", 1, {"spine"}), three_switches());
    assert_true(next.granted.id > b.granted.id);  // ids are not reused

    // A format 1 file (members only): read, switches get the default slots.
    {
        std::ofstream old(path, std::ios::trunc);
        old << R"({"format": 1, "next_id": 3, "members": [)"
            << R"({"id": 1, "name": "leaf0", "kind": "switch", "addresses": [], "lease": "x",)"
            << R"( "state": "up", "joined_unix_s": 1},)"
            << R"({"id": 2, "name": "h0", "kind": "host", "addresses": [], "lease": "y",)"
            << R"( "state": "up", "joined_unix_s": 1}]})";
    }
    stored = load_state(path);
    assert_true(stored.is_ok());
    assert_int_equal(stored->members[0].slots, default_slots);
    assert_int_equal(stored->members[1].slots, 0);
    assert_int_equal(stored->allocations.size(), 0);
    std::remove(path.c_str());
}

LOOM_TEST_MAIN("control_slots", cmocka_unit_test(a_full_node_refuses_the_whole_tree_naming_it),
               cmocka_unit_test(unknown_out_and_empty_trees_are_refused_naming_why),
               cmocka_unit_test(a_job_over_its_quota_is_refused_and_one_comm_holds_one),
               cmocka_unit_test(an_allocation_runs_out_after_three_periods_not_before),
               cmocka_unit_test(a_node_going_out_revokes_the_allocations_that_use_it),
               cmocka_unit_test(the_store_keeps_allocations_and_reads_format_1))
