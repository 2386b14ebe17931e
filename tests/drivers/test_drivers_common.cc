// SPDX-License-Identifier: Apache-2.0
// drivers/common: the pieces every driver matches through, tested on their own (the driver
// suites test them again through real endpoints). The loopback matcher: match before and
// after, mismatch by imm and by length, control tags, cancel of each kind, pool exhaustion,
// completion order, close. The matcher under it: duplicate tags oldest first, the same-call
// mismatch from either side, pool exhaustion, completions in order, cancel's lookup. The
// same-call rule and the completion ring.
#include <cstring>
#include <vector>

#include "drivers/common/completion_ring.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/matcher.hh"
#include "test_main.hh"

using namespace loom;
using drivers::completion;
namespace common = drivers::common;
using common::loopback;

namespace {

struct test_op : common::match_op<test_op> {};
struct test_early {
    test_early* next = nullptr;
    test_early* prev = nullptr;
    uint64_t tag     = 0;
    uint64_t imm     = 0;
};

// A tag of call `call` (the call bits of driver.hh call_tag_mask) and message `msg`.
constexpr uint64_t call_tag(uint64_t call, uint64_t msg) {
    return (call << 32) | msg;
}

int drain(loopback& lb, completion* out, int max) {
    int n = 0;
    while (n < max) {
        int got = lb.poll(out + n, max - n);
        if (got == 0) {
            break;
        }
        n += got;
    }
    return n;
}

}  // namespace

// ---- the loopback matcher ----

static void loopback_matches_before_and_after(void**) {
    loopback lb(3, 8);
    char a[16] = "first", b[16] = "second", ra[16] = {}, rb[16] = {};
    assert_int_equal(lb.post_recv(1, 10, ra, sizeof(ra), 100), LOOM_SUCCESS);
    assert_int_equal(lb.post_send(1, 10, a, sizeof(a), 101), LOOM_SUCCESS);
    assert_int_equal(lb.post_send(2, 20, b, sizeof(b), 102), LOOM_SUCCESS);
    assert_true(lb.pending());
    assert_int_equal(lb.post_recv(2, 20, rb, sizeof(rb), 103), LOOM_SUCCESS);
    completion c[8];
    assert_int_equal(drain(lb, c, 8), 4);
    // When one match completes two operations, the one posted first comes out first.
    uint64_t want[4] = {100, 101, 102, 103};
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(c[i].cookie, want[i]);
        assert_int_equal(c[i].status, LOOM_SUCCESS);
        assert_int_equal(c[i].bytes, 16);
        assert_int_equal(c[i].peer, 3);
    }
    assert_int_equal(c[0].tag, 1);
    assert_int_equal(c[0].imm, 10);
    assert_string_equal(ra, "first");
    assert_string_equal(rb, "second");
    assert_false(lb.pending());
}

static void loopback_mismatch_by_imm_and_by_length(void**) {
    loopback lb(0, 8);
    char s[8] = "payload", r[8] = "zzzzzzz";
    // Another immediate: the receive completes MISMATCH with the imm that came, the send
    // completes SUCCESS, and not a byte lands.
    assert_int_equal(lb.post_recv(5, 1, r, sizeof(r), 1), LOOM_SUCCESS);
    assert_int_equal(lb.post_send(5, 2, s, sizeof(s), 2), LOOM_SUCCESS);
    // Another length, send first.
    assert_int_equal(lb.post_send(6, 3, s, 4, 3), LOOM_SUCCESS);
    assert_int_equal(lb.post_recv(6, 3, r, sizeof(r), 4), LOOM_SUCCESS);
    completion c[4];
    assert_int_equal(drain(lb, c, 4), 4);
    assert_int_equal(c[0].cookie, 1);
    assert_int_equal(c[0].status, LOOM_ERR_MISMATCH);
    assert_int_equal(c[0].imm, 2);
    assert_int_equal(c[0].bytes, 0);
    assert_int_equal(c[1].cookie, 2);
    assert_int_equal(c[1].status, LOOM_SUCCESS);
    assert_int_equal(c[2].cookie, 3);
    assert_int_equal(c[2].status, LOOM_SUCCESS);
    assert_int_equal(c[2].bytes, 4);
    assert_int_equal(c[3].cookie, 4);
    assert_int_equal(c[3].status, LOOM_ERR_MISMATCH);
    assert_memory_equal(r, "zzzzzzz", sizeof(r));
}

static void loopback_control_tags_are_never_matched(void**) {
    loopback lb(2, 4);
    uint64_t tag = drivers::control_tag_bit | 9;
    char r       = 0;
    assert_int_equal(lb.post_recv(tag, 0, &r, 1, 1), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(lb.post_send(tag, 77, nullptr, 0, 2), LOOM_SUCCESS);
    completion c[2];
    assert_int_equal(drain(lb, c, 2), 1);  // the notice, and nothing for the send itself
    assert_int_equal(c[0].cookie, drivers::control_cookie);
    assert_int_equal(c[0].tag, tag);
    assert_int_equal(c[0].imm, 77);
    assert_int_equal(c[0].peer, 2);
    assert_int_equal(c[0].status, LOOM_SUCCESS);
}

static void loopback_cancel_of_each_kind(void**) {
    loopback lb(0, 4);
    char s = 's', r = 'r';
    assert_int_equal(lb.post_send(1, 0, &s, 1, 10), LOOM_SUCCESS);
    assert_int_equal(lb.post_recv(2, 0, &r, 1, 11), LOOM_SUCCESS);
    assert_true(lb.cancel(10));   // an unmatched send
    assert_true(lb.cancel(11));   // an unmatched receive
    assert_false(lb.cancel(10));  // already withdrawn
    assert_false(lb.cancel(99));  // never posted
    assert_false(lb.pending());
    completion c[4];
    assert_int_equal(lb.poll(c, 4), 0);
    // The withdrawn send is not matched by a later receive of its tag.
    assert_int_equal(lb.post_recv(1, 0, &r, 1, 12), LOOM_SUCCESS);
    assert_int_equal(lb.poll(c, 4), 0);
    char t = 't';
    assert_int_equal(lb.post_send(1, 0, &t, 1, 13), LOOM_SUCCESS);
    // A matched operation completed already: nothing to withdraw, its completion stays.
    assert_false(lb.cancel(12));
    assert_int_equal(drain(lb, c, 4), 2);
    assert_int_equal(r, 't');
}

static void loopback_pool_exhaustion_is_no_resource(void**) {
    loopback lb(0, 2);
    char b[2] = {};
    assert_int_equal(lb.post_recv(1, 0, &b[0], 1, 1), LOOM_SUCCESS);
    assert_int_equal(lb.post_recv(2, 0, &b[1], 1, 2), LOOM_SUCCESS);
    assert_int_equal(lb.post_recv(3, 0, &b[0], 1, 3), LOOM_ERR_NO_RESOURCE);
    assert_int_equal(lb.post_send(drivers::control_tag_bit, 0, nullptr, 0, 4),
                     LOOM_ERR_NO_RESOURCE);
    // A completion gives its entry back only when poll() hands it out.
    char s = 'x';
    assert_int_equal(lb.post_send(1, 0, nullptr, 1, 5), LOOM_ERR_INVALID_ARGUMENT);
    assert_true(lb.cancel(2));
    assert_int_equal(lb.post_send(1, 0, &s, 1, 6), LOOM_SUCCESS);
    assert_int_equal(lb.post_recv(3, 0, &b[0], 1, 7), LOOM_ERR_NO_RESOURCE);
    completion c[4];
    assert_int_equal(drain(lb, c, 4), 2);
    assert_int_equal(lb.post_recv(3, 0, &b[0], 1, 8), LOOM_SUCCESS);
}

static void loopback_completions_keep_their_order(void**) {
    loopback lb(0, 64);
    constexpr int n = 16;
    char out[n], in[n];
    for (int k = 0; k < n; ++k) {
        out[k] = char('a' + k);
        assert_int_equal(lb.post_send(1000 + k, 0, &out[k], 1, k), LOOM_SUCCESS);
    }
    for (int k = n - 1; k >= 0; --k) {  // receives in reverse: matched by tag, not FIFO
        assert_int_equal(lb.post_recv(1000 + k, 0, &in[k], 1, 100 + k), LOOM_SUCCESS);
    }
    completion c[2 * n];
    assert_int_equal(drain(lb, c, 2 * n), 2 * n);
    for (int i = 0; i < n; ++i) {
        int k = n - 1 - i;  // completed in the receives' order, the send (posted first) first
        assert_int_equal(c[2 * i].cookie, k);
        assert_int_equal(c[2 * i + 1].cookie, 100 + k);
        assert_int_equal(in[k], 'a' + k);
    }
}

static void loopback_fail_all_completes_the_unmatched(void**) {
    loopback lb(0, 4);
    char b = 0;
    assert_int_equal(lb.post_recv(1, 0, &b, 1, 1), LOOM_SUCCESS);
    assert_int_equal(lb.post_send(2, 0, &b, 1, 2), LOOM_SUCCESS);
    lb.fail_all(LOOM_ERR_PEER_FAILURE);
    completion c[4];
    assert_int_equal(drain(lb, c, 4), 2);
    assert_int_equal(c[0].cookie + c[1].cookie, 3);
    assert_int_equal(c[0].status, LOOM_ERR_PEER_FAILURE);
    assert_int_equal(c[1].status, LOOM_ERR_PEER_FAILURE);
    assert_false(lb.pending());
}

// ---- the matcher ----

static void matcher_takes_duplicate_tags_oldest_first(void**) {
    common::slab<test_early> pool;
    pool.init(4);
    common::match_lists<test_op, test_early> lists;
    for (uint64_t imm : {1, 2, 3}) {  // a duplicating wrapper: tag 7 twice, then tag 8
        test_early* m = pool.take();
        m->tag        = imm < 3 ? 7 : 8;
        m->imm        = imm;
        lists.early.push_back(m);
    }
    assert_int_equal(lists.take_early(7)->imm, 1);
    assert_int_equal(lists.take_early(7)->imm, 2);
    assert_null(lists.take_early(7));
    assert_int_equal(lists.take_early(8)->imm, 3);
    common::matcher<test_op> m;
    m.open(4);
    for (uint64_t cookie : {10, 11}) {
        test_op* o = m.take(1, 5, 0, nullptr, 0, cookie);
        lists.posted.push_back(o);
    }
    assert_int_equal(lists.take_posted(5)->cookie, 10);
    assert_int_equal(lists.take_posted(5)->cookie, 11);
    assert_null(lists.take_posted(5));
}

static void matcher_finds_the_same_call_from_either_side(void**) {
    common::slab<test_early> pool;
    pool.init(2);
    common::match_lists<test_op, test_early> lists;
    test_early* e = pool.take();
    e->tag        = call_tag(3, 1);
    e->imm        = 9;
    lists.early.push_back(e);
    // A receive of another message of call 3 expecting another imm: the calls differ. It
    // stays listed (nothing of it is delivered); the same imm or another call is no proof.
    assert_ptr_equal(lists.early_contradicting(call_tag(3, 2), 8), e);
    assert_null(lists.early_contradicting(call_tag(3, 2), 9));
    assert_null(lists.early_contradicting(call_tag(4, 2), 8));
    assert_int_equal(lists.early.size(), 1);
    common::matcher<test_op> m;
    m.open(2);
    test_op* r = m.take(0, call_tag(5, 1), 4, nullptr, 0, 77);
    lists.posted.push_back(r);
    assert_null(lists.take_posted_contradicting(call_tag(5, 2), 4));
    assert_ptr_equal(lists.take_posted_contradicting(call_tag(5, 2), 6), r);
    assert_true(lists.posted.empty());
    m.complete_mismatch(r, 6);
    completion c[2];
    assert_int_equal(m.harvest(c, 2), 1);
    assert_int_equal(c[0].status, LOOM_ERR_MISMATCH);
    assert_int_equal(c[0].imm, 6);  // the immediate that came
    assert_int_equal(c[0].bytes, 0);
}

static void matcher_pool_runs_out_and_comes_back(void**) {
    common::matcher<test_op> m;
    m.open(2);
    test_op* a = m.take(0, 1, 0, nullptr, 0, 1);
    test_op* b = m.take(0, 2, 0, nullptr, 0, 2);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(m.take(0, 3, 0, nullptr, 0, 3));  // the driver answers NO_RESOURCE
    assert_int_equal(m.in_use(), 2);
    m.complete(a, LOOM_SUCCESS, 0);
    assert_null(m.take(0, 3, 0, nullptr, 0, 3));  // back only once poll() handed it out
    completion c[1];
    assert_int_equal(m.harvest(c, 1), 1);
    assert_non_null(m.take(0, 3, 0, nullptr, 0, 3));
    m.release(b);  // a cancelled one returns without a completion
    assert_non_null(m.take(0, 4, 0, nullptr, 0, 4));
    assert_int_equal(m.in_use(), 2);
}

static void matcher_hands_out_completions_in_order(void**) {
    common::matcher<test_op> m;
    m.open(8);
    test_op* o[6];
    for (uint64_t i = 0; i < 6; ++i) {
        o[i] = m.take(int(i), 100 + i, i, nullptr, 0, i);
    }
    for (int i : {3, 1, 4, 0, 5, 2}) {
        m.complete(o[i], LOOM_SUCCESS, size_t(i));
    }
    o[4]->cancelled = true;  // failed after its cancel: its caller has moved on
    completion c[8];
    int n = m.harvest(c, 2);
    n += m.harvest(c + n, 8 - n);
    assert_int_equal(n, 5);
    int want[] = {3, 1, 0, 5, 2};
    for (int i = 0; i < 5; ++i) {
        assert_int_equal(c[i].cookie, want[i]);
        assert_int_equal(c[i].peer, want[i]);
        assert_int_equal(c[i].tag, 100 + want[i]);
        assert_int_equal(c[i].bytes, want[i]);
    }
    assert_false(m.pending());
}

static void matcher_cancel_finds_only_pending_operations(void**) {
    common::matcher<test_op> m;
    m.open(4);
    test_op* a = m.take(0, 1, 0, nullptr, 0, 50);
    test_op* b = m.take(0, 2, 0, nullptr, 0, 50);
    assert_ptr_equal(m.find_pending(50), a);
    a->cancelled = true;  // being withdrawn: not found twice
    assert_ptr_equal(m.find_pending(50), b);
    m.complete(b, LOOM_SUCCESS, 0);  // completed: nothing left to withdraw
    assert_null(m.find_pending(50));
    assert_null(m.find_pending(51));
}

// ---- the same-call rule and the completion ring ----

static void call_rule_needs_same_call_other_imm(void**) {
    using drivers::same_call_other_imm;
    assert_true(same_call_other_imm(call_tag(1, 2), 6, call_tag(1, 1), 5));   // another imm
    assert_false(same_call_other_imm(call_tag(1, 2), 5, call_tag(1, 1), 5));  // same imm
    assert_false(same_call_other_imm(call_tag(2, 1), 6, call_tag(1, 1), 5));  // another call
    assert_false(same_call_other_imm(call_tag(0, 2), 6, call_tag(0, 1), 5));  // raw: exempt
    // The control bit is not a call bit.
    assert_true(
        same_call_other_imm(call_tag(3, 9), 4, drivers::control_tag_bit | call_tag(3, 1), 5));
}

static void completion_ring_is_fifo_across_wraps(void**) {
    common::completion_ring<int> q;
    q.init(5);
    assert_int_equal(q.capacity(), 8);
    assert_true(q.empty());
    int next_in = 0, next_out = 0;
    for (int round = 0; round < 100; ++round) {
        int burst = 1 + round % 8;
        for (int i = 0; i < burst; ++i) {
            q.push(next_in++);
        }
        assert_int_equal(q.size(), burst);
        while (!q.empty()) {
            assert_int_equal(q.front(), next_out++);
            q.pop();
        }
    }
    assert_int_equal(next_in, next_out);
}

LOOM_TEST_MAIN("drivers_common", cmocka_unit_test(loopback_matches_before_and_after),
               cmocka_unit_test(loopback_mismatch_by_imm_and_by_length),
               cmocka_unit_test(loopback_control_tags_are_never_matched),
               cmocka_unit_test(loopback_cancel_of_each_kind),
               cmocka_unit_test(loopback_pool_exhaustion_is_no_resource),
               cmocka_unit_test(loopback_completions_keep_their_order),
               cmocka_unit_test(loopback_fail_all_completes_the_unmatched),
               cmocka_unit_test(matcher_takes_duplicate_tags_oldest_first),
               cmocka_unit_test(matcher_finds_the_same_call_from_either_side),
               cmocka_unit_test(matcher_pool_runs_out_and_comes_back),
               cmocka_unit_test(matcher_hands_out_completions_in_order),
               cmocka_unit_test(matcher_cancel_finds_only_pending_operations),
               cmocka_unit_test(call_rule_needs_same_call_other_imm),
               cmocka_unit_test(completion_ring_is_fifo_across_wraps))
