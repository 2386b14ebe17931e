// SPDX-License-Identifier: Apache-2.0
// fabric/control: the member table and its leases, and the store file it is kept in. A lease
// runs out after three periods without a heartbeat and never before; a down member or an old
// lease is refused until the member joins again (same id, a new lease); the table survives a
// save and a load whole, and a restored member gets a fresh grace.
#include <chrono>
#include <cstdio>
#include <string>

#include "control/members.hh"
#include "control/store_file.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::control;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds period{200};

join_request request(const std::string& name, member_kind kind = member_kind::host) {
    return {name, kind, {"10.0.0.1:7000"}};
}

}  // namespace

static void a_rejoin_keeps_the_id_and_changes_the_lease(void**) {
    member_table table(period, 16);
    auto a = table.join(request("node-a"));
    auto b = table.join(request("dpu-a", member_kind::dpu));
    assert_true(a.is_ok() && b.is_ok());
    assert_int_not_equal(a->id, b->id);
    assert_true(a->lease.size() >= 32);
    auto again = table.join(request("node-a"));
    assert_true(again.is_ok());
    assert_int_equal(again->id, a->id);
    assert_true(again->lease != a->lease);
    assert_int_equal(table.snapshot().size(), 2);
    assert_true(table.heartbeat(a->id, a->lease) == lease_refusal::stale_lease);
    assert_true(table.heartbeat(a->id, again->lease) == lease_refusal::none);
    assert_true(table.heartbeat(999, again->lease) == lease_refusal::unknown_member);
}

static void a_lease_runs_out_after_three_periods_not_before(void**) {
    member_table table(period, 16);
    auto a = table.join(request("node-a"));
    assert_true(a.is_ok());
    auto start = steady::now();
    assert_int_equal(table.sweep(start + 2 * period), 0);
    assert_int_equal(table.sweep(start + 3 * period + milliseconds(5)), 1);
    assert_int_equal(table.sweep(start + 10 * period), 0);  // counted once
    assert_true(table.snapshot()[0].state == member_state::down);
    assert_true(table.heartbeat(a->id, a->lease) == lease_refusal::down);
    auto again = table.join(request("node-a"));
    assert_true(again.is_ok());
    assert_true(again->state == member_state::up);
    assert_true(table.heartbeat(a->id, again->lease) == lease_refusal::none);
}

static void a_full_table_refuses_a_new_member_not_a_rejoin(void**) {
    member_table table(period, 2);
    assert_true(table.join(request("a")).is_ok());
    assert_true(table.join(request("b")).is_ok());
    auto c = table.join(request("c"));
    assert_false(c.is_ok());
    test::expect_has(c.error().message(), "the member table is full (2 members");
    assert_true(table.join(request("a")).is_ok());
    assert_true(table.leave(1));
    assert_false(table.leave(1));
    assert_true(table.join(request("c")).is_ok());
}

static void the_store_keeps_the_table_whole(void**) {
    std::string path = test::temp_path("control", "state");
    member_table table(period, 16);
    auto a = table.join(request("node-a"));
    auto d = table.join(request("dpu-a", member_kind::dpu));
    auto s = table.join(request("sw-0", member_kind::sw));
    assert_true(a.is_ok() && d.is_ok() && s.is_ok());
    assert_true(table.leave(s->id));
    assert_int_equal(table.sweep(steady::now() + 4 * period), 2);
    auto again = table.join(request("node-a"));
    assert_true(again.is_ok());
    assert_true(save_state(path, table.snapshot(), table.next_id()).is_ok());

    auto stored = load_state(path);
    std::remove(path.c_str());
    assert_true(stored.is_ok());
    assert_int_equal(stored->next_id, 4);  // the id of the member that left is not reused
    assert_int_equal(stored->members.size(), 2);
    member_table restored(period, 16);
    restored.restore(stored->members, stored->next_id);
    // The up member resumes with its lease and a fresh grace; the down one stays down.
    assert_int_equal(restored.sweep(steady::now() + period), 0);
    assert_true(restored.heartbeat(again->id, again->lease) == lease_refusal::none);
    assert_true(restored.heartbeat(d->id, d->lease) == lease_refusal::down);
    auto members = restored.snapshot();
    assert_string_equal(members[1].name.c_str(), "dpu-a");
    assert_true(members[1].kind == member_kind::dpu);
    assert_string_equal(members[0].addresses.at(0).c_str(), "10.0.0.1:7000");
    auto next = restored.join(request("node-b"));
    assert_true(next.is_ok());
    assert_int_equal(next->id, 4);
}

static void a_missing_store_is_empty_and_a_foreign_one_refused(void**) {
    std::string path = test::temp_path("control", "foreign");
    auto none        = load_state(path);
    assert_true(none.is_ok());
    assert_int_equal(none->members.size(), 0);
    for (const char* text : {"{\"members\": 3", "[1, 2]", "{\"format\": 7, \"members\": []}",
                             "{\"format\": 1, \"next_id\": 2, \"members\": [{\"id\": 1}]}"}) {
        std::FILE* f = std::fopen(path.c_str(), "w");
        assert_non_null(f);
        std::fputs(text, f);
        std::fclose(f);
        auto stored = load_state(path);
        assert_false(stored.is_ok());
        test::expect_has(stored.error().message(), "not a state file of loom-ctld");
    }
    std::remove(path.c_str());
}

LOOM_TEST_MAIN("control_members", cmocka_unit_test(a_rejoin_keeps_the_id_and_changes_the_lease),
               cmocka_unit_test(a_lease_runs_out_after_three_periods_not_before),
               cmocka_unit_test(a_full_table_refuses_a_new_member_not_a_rejoin),
               cmocka_unit_test(the_store_keeps_the_table_whole),
               cmocka_unit_test(a_missing_store_is_empty_and_a_foreign_one_refused))
