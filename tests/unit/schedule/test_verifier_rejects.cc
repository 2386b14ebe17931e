// SPDX-License-Identifier: Apache-2.0
// The verifier rejects deliberately broken schedules, each with a message that names the
// rank, the step and (for values) the element. A correct schedule of the same shape passes,
// so every rejection below is caused by the one defect the test introduces.
#include <string>

#include "algorithms/algorithm.hh"
#include "schedule/verifier.hh"
#include "shape_of.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using loom::schedule::buffer_id;
using loom::schedule::builder;
using loom::schedule::collective;
using loom::schedule::in;
using loom::schedule::no_step;
using loom::schedule::out;
using loom::schedule::rank_schedule;
using loom::schedule::step_id;
using loom::schedule::step_kind;
using loom::schedule::verify;
using sched = loom::schedule::schedule;

namespace {

// Two-rank all-reduce by exchange: each sends its input, receives the other's and adds it.
sched exchange_allreduce(int64_t count) {
    sched s;
    s.info.coll   = collective::allreduce;
    s.info.nranks = 2;
    s.info.count  = count;
    for (int r = 0; r < 2; ++r) {
        rank_schedule rs;
        rs.rank = r;
        builder b(rs);
        b.send(1 - r, in(0, count));
        b.recv_reduce(1 - r, out(0, count), in(0, count));
        s.ranks.push_back(rs);
    }
    return s;
}

// Three-rank in-network all-reduce on slot 7 (3 contributors declared): ranks below
// `pushers` push their input, every rank pulls the result.
sched inc_allreduce(int pushers) {
    sched s;
    s.info.coll   = collective::allreduce;
    s.info.nranks = 3;
    s.info.count  = 4;
    for (int r = 0; r < 3; ++r) {
        rank_schedule rs;
        rs.rank = r;
        builder b(rs);
        step_id p = r < pushers ? b.inc_push(in(0, 4), 7, 3) : no_step;
        b.inc_pull(out(0, 4), 7, 3, {p});
        s.ranks.push_back(rs);
    }
    return s;
}

void expect_rejected(const sched& s, const std::string& must_contain) {
    test::expect_error(verify(s).result, LOOM_ERR_VERIFY, must_contain, "a broken schedule");
}

}  // namespace

static void correct_exchange_is_accepted(void**) {
    auto report = verify(exchange_allreduce(10));
    test::expect_ok(report.result);
    assert_int_equal(report.stats.rounds, 1);
    assert_true(report.stats.edge_bytes == 40);
}

static void missing_contribution_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    // Rank 1 overwrites with rank 0's data instead of adding: its own contribution is lost.
    s.ranks[1].steps[1].kind = step_kind::recv;
    s.ranks[1].steps[1].src  = {};
    expect_rejected(s, "rank 1 out[0] holds ranks {0}");
}

static void contribution_counted_twice_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    // Rank 0 adds its own input once more after the exchange.
    builder(s.ranks[0]).local_reduce(out(0, 10), out(0, 10), in(0, 10), {1});
    expect_rejected(
        s, "rank 0 step 2 (local_reduce) counts the contribution of rank 0 twice at out[0]");
}

static void unmatched_send_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    builder(s.ranks[0]).send(1, in(0, 10), {1});
    expect_rejected(s,
                    "rank 0 step 2 (send to 1): send #2 to rank 1 (tag 0) has no matching receive");
}

static void unmatched_receive_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    builder(s.ranks[0]).recv(1, out(0, 10), {1});
    expect_rejected(s, "rank 0 step 2 (recv from 1) has no matching send");
}

static void length_mismatch_is_rejected(void**) {
    auto s                        = exchange_allreduce(10);
    s.ranks[0].steps[0].src.count = 5;
    expect_rejected(s, "rank 0 step 0 (send to 1) sends 5 elements but the matching rank 1 step 1");
}

static void wait_cycle_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    // Both ranks receive before they send: under rendezvous neither send is ever posted.
    for (auto& rs : s.ranks) {
        rank_schedule fixed;
        fixed.rank = rs.rank;
        builder b(fixed);
        step_id r = b.recv_reduce(1 - rs.rank, out(0, 10), in(0, 10));
        b.send(1 - rs.rank, in(0, 10), {r});
        rs = fixed;
    }
    expect_rejected(s,
                    "deadlock: wait cycle rank 0 step 0 (recv_reduce from 1) waits for its partner "
                    "rank 1 step 1 (send to 0) depends on rank 1 step 0");
}

static void out_of_bounds_region_is_rejected(void**) {
    auto s                         = exchange_allreduce(10);
    s.ranks[1].steps[1].dst.offset = 4;
    expect_rejected(s,
                    "rank 1 step 1 (recv_reduce from 0): destination region out[4, 14) is out of "
                    "bounds (the buffer holds 10 elements)");
}

static void write_to_input_is_rejected(void**) {
    auto s                      = exchange_allreduce(10);
    s.ranks[0].steps[1].dst.buf = buffer_id::input;
    expect_rejected(s, "writes the input buffer, which is read-only");
}

static void race_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    // A copy into the output that does not wait for the receive writing the same elements.
    builder(s.ranks[0]).local_copy(out(0, 10), in(0, 10));
    expect_rejected(
        s, "rank 0 step 1 (recv_reduce from 1) and rank 0 step 2 (local_copy) race on out[0]");
}

static void misaligned_reduction_is_rejected(void**) {
    auto s                         = exchange_allreduce(10);
    s.ranks[1].steps[1].src.offset = 0;
    s.ranks[1].steps[1].dst        = out(0, 5);
    s.ranks[1].steps[1].src        = in(5, 5);
    s.ranks[0].steps[0].src        = in(0, 5);
    expect_rejected(s, "reduces misaligned elements");
}

static void dependency_on_later_step_is_rejected(void**) {
    auto s = exchange_allreduce(10);
    s.ranks[0].deps.push_back(1);
    s.ranks[0].steps[0].first_dep = 0;
    s.ranks[0].steps[0].ndeps     = 1;
    expect_rejected(s,
                    "rank 0 step 0 (send to 1): depends on step 1, which is not an earlier step");
}

static void unwritten_output_is_rejected(void**) {
    sched s                 = exchange_allreduce(10);
    s.ranks[0].steps[1].dst = out(0, 9);
    s.ranks[0].steps[1].src = in(0, 9);
    s.ranks[1].steps[0].src = in(0, 9);
    expect_rejected(s, "rank 0 out[9] holds nothing (never written)");
}

static void peer_out_of_range_is_rejected(void**) {
    auto s                   = exchange_allreduce(10);
    s.ranks[0].steps[0].peer = 7;
    expect_rejected(s, "rank 0 step 0 (send to 7): peer 7 is not another rank of 0..1");
}

static void inc_slot_without_all_contributors_deadlocks(void**) {
    // Two pushes exist but every rank says the slot has 3 contributors.
    expect_rejected(inc_allreduce(2),
                    "expects 3 contributors but the schedule pushes 2 into slot 7");
}

static void inc_allreduce_is_accepted(void**) {
    sched s     = inc_allreduce(3);
    auto report = verify(s);
    test::expect_ok(report.result);
    assert_int_equal(report.stats.rounds, 2);
}

// A large, real schedule verifies quickly: regions, not elements.
static void ring_allreduce_n64_million_elements_verifies(void**) {
    auto stats = test::expect_verifies(test::find_algorithm(collective::allreduce, "ring"),
                                       test::make_call(collective::allreduce, 64, 1000003));
    assert_int_equal(stats.rounds, 126);
}

LOOM_TEST_MAIN("schedule_verifier_rejects", cmocka_unit_test(correct_exchange_is_accepted),
               cmocka_unit_test(missing_contribution_is_rejected),
               cmocka_unit_test(contribution_counted_twice_is_rejected),
               cmocka_unit_test(unmatched_send_is_rejected),
               cmocka_unit_test(unmatched_receive_is_rejected),
               cmocka_unit_test(length_mismatch_is_rejected),
               cmocka_unit_test(wait_cycle_is_rejected),
               cmocka_unit_test(out_of_bounds_region_is_rejected),
               cmocka_unit_test(write_to_input_is_rejected), cmocka_unit_test(race_is_rejected),
               cmocka_unit_test(misaligned_reduction_is_rejected),
               cmocka_unit_test(dependency_on_later_step_is_rejected),
               cmocka_unit_test(unwritten_output_is_rejected),
               cmocka_unit_test(peer_out_of_range_is_rejected),
               cmocka_unit_test(inc_slot_without_all_contributors_deadlocks),
               cmocka_unit_test(inc_allreduce_is_accepted),
               cmocka_unit_test(ring_allreduce_n64_million_elements_verifies))
