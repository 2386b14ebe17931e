// drivers/common: the pieces every driver matches through, tested on their own (the driver
// suites test them again through real endpoints). The loopback matcher: match before and
// after, mismatch by imm and by length, control tags, cancel of each kind, pool exhaustion,
// completion order, close. The (peer, direction, tag) table: keys apart, the oldest of two
// equal keys first, a full table, deletion that keeps every other entry reachable. The
// same-call rule and the completion ring.
#include <cstring>
#include <random>
#include <vector>

#include "drivers/common/call_rule.hh"
#include "drivers/common/completion_ring.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/match_table.hh"
#include "test_main.hh"

using namespace loom;
using drivers::completion;
using drivers::common::completion_ring;
using drivers::common::dir;
using drivers::common::entry;
using drivers::common::entry_state;
using drivers::common::last_call;
using drivers::common::loopback;
using drivers::common::match_table;
using drivers::common::ref_entry;
using drivers::common::ref_table;

namespace {

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

// ---- the (peer, direction, tag) table ----

static void table_keys_are_apart(void**) {
    match_table t;
    t.init(8);
    assert_true(t.capacity() >= 16);
    entry* a = t.insert(1, dir::recv, 7, entry_state::posted);
    entry* b = t.insert(2, dir::recv, 7, entry_state::early_eager);
    entry* c = t.insert(1, dir::send, 7, entry_state::awaiting_cts);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    a->cookie = 1, b->cookie = 2, c->cookie = 3;
    assert_int_equal(t.find(1, dir::recv, 7)->cookie, 1);
    assert_int_equal(t.find(2, dir::recv, 7)->cookie, 2);
    assert_int_equal(t.find(1, dir::send, 7)->cookie, 3);
    assert_null(t.find(3, dir::recv, 7));
    assert_null(t.find(1, dir::recv, 8));
    assert_null(t.find(1, dir::recv, 7, entry_state::early_rts));
    assert_int_equal(t.find_unclaimed(2, 7)->cookie, 2);
    assert_null(t.find_unclaimed(1, 7));  // a posted receive is not an arrival
    assert_int_equal(t.size(), 3);
}

static void table_equal_keys_come_out_oldest_first(void**) {
    match_table t;
    t.init(4);
    t.insert(0, dir::recv, 5, entry_state::early_eager)->cookie = 1;
    t.insert(0, dir::recv, 5, entry_state::early_eager)->cookie = 2;
    entry* first                                                = t.find(0, dir::recv, 5);
    assert_int_equal(first->cookie, 1);
    first->claimed = true;
    assert_int_equal(t.find_unclaimed(0, 5)->cookie, 2);
    // find_if picks among equal keys by what the entry holds (an index kept in the cookie).
    entry* second = t.find_if(0, dir::recv, 5, [](const entry& e) { return e.cookie == 2; });
    assert_non_null(second);
    assert_int_equal(second->cookie, 2);
    assert_null(t.find_if(0, dir::recv, 5, [](const entry& e) { return e.cookie == 3; }));
    t.erase(first);
    assert_int_equal(t.find(0, dir::recv, 5)->cookie, 2);
}

static void table_full_refuses_inserts(void**) {
    match_table t;
    t.init(3);
    for (uint64_t i = 0; i < 3; ++i) {
        assert_non_null(t.insert(0, dir::recv, i, entry_state::posted));
    }
    assert_true(t.full());
    assert_null(t.insert(0, dir::recv, 99, entry_state::posted));
    t.erase(t.find(0, dir::recv, 1));
    assert_false(t.full());
    assert_non_null(t.insert(0, dir::recv, 99, entry_state::posted));
}

// Random inserts and erases against a plain list: backward-shift deletion must keep every
// remaining entry reachable from its home slot. Both entry types share the table.
template <class Table>
static void erase_keeps_the_rest_reachable() {
    Table t;
    t.init(256);
    std::mt19937_64 rng(13);
    std::vector<std::pair<int, uint64_t>> live;
    for (int round = 0; round < 20000; ++round) {
        bool add = live.empty() || (!t.full() && rng() % 2 == 0);
        if (add) {
            int peer     = int(rng() % 8);
            uint64_t tag = call_tag(rng() % 4, rng() % 64);
            if (t.find(peer, dir::recv, tag) != nullptr) {
                continue;
            }
            auto* e   = t.insert(peer, dir::recv, tag, entry_state::posted);
            e->cookie = uint64_t(round);
            live.push_back({peer, tag});
        } else {
            size_t k = rng() % live.size();
            t.erase(t.find(live[k].first, dir::recv, live[k].second));
            live[k] = live.back();
            live.pop_back();
        }
        if (round % 97 == 0) {
            for (auto& [peer, tag] : live) {
                assert_non_null(t.find(peer, dir::recv, tag));
            }
        }
    }
    assert_int_equal(t.size(), live.size());
}

static void table_erase_keeps_the_rest_reachable(void**) {
    erase_keeps_the_rest_reachable<match_table>();
    erase_keeps_the_rest_reachable<ref_table>();
}

// The compact table: an index into the endpoint's own pools, a state per entry.
static void ref_table_names_pool_entries(void**) {
    ref_table t;
    t.init(4);
    t.insert(1, dir::recv, 9, entry_state::posted)->cookie      = 40;
    t.insert(1, dir::recv, 9, entry_state::early_eager)->cookie = 41;
    assert_int_equal(t.find(1, dir::recv, 9, entry_state::early_eager)->cookie, 41);
    ref_entry* posted = t.find(1, dir::recv, 9, entry_state::posted);
    assert_int_equal(posted->cookie, 40);
    t.erase(posted);
    assert_null(t.find(1, dir::recv, 9, entry_state::posted));
    assert_int_equal(t.find(1, dir::recv, 9)->cookie, 41);
}

// ---- the same-call rule and the completion ring ----

static void call_rule_needs_same_call_other_imm(void**) {
    last_call r;
    assert_false(r.contradicts(call_tag(1, 1), 5));  // nothing seen yet
    r.remember(call_tag(1, 1), 5);
    assert_true(r.contradicts(call_tag(1, 2), 6));   // same call, another message and imm
    assert_false(r.contradicts(call_tag(1, 2), 5));  // same call, same imm
    assert_false(r.contradicts(call_tag(2, 1), 6));  // another call
    r.remember(call_tag(0, 1), 5);                   // raw use of a driver: exempt
    assert_false(r.contradicts(call_tag(0, 2), 6));
    r.remember(drivers::control_tag_bit | call_tag(3, 1), 5);  // control bit is not a call bit
    assert_true(r.contradicts(call_tag(3, 9), 4));
}

static void completion_ring_is_fifo_across_wraps(void**) {
    completion_ring<int> q;
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

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loopback_matches_before_and_after),
        cmocka_unit_test(loopback_mismatch_by_imm_and_by_length),
        cmocka_unit_test(loopback_control_tags_are_never_matched),
        cmocka_unit_test(loopback_cancel_of_each_kind),
        cmocka_unit_test(loopback_pool_exhaustion_is_no_resource),
        cmocka_unit_test(loopback_completions_keep_their_order),
        cmocka_unit_test(loopback_fail_all_completes_the_unmatched),
        cmocka_unit_test(table_keys_are_apart),
        cmocka_unit_test(table_equal_keys_come_out_oldest_first),
        cmocka_unit_test(table_full_refuses_inserts),
        cmocka_unit_test(table_erase_keeps_the_rest_reachable),
        cmocka_unit_test(ref_table_names_pool_entries),
        cmocka_unit_test(call_rule_needs_same_call_other_imm),
        cmocka_unit_test(completion_ring_is_fifo_across_wraps),
    };
    return LOOM_RUN_TESTS("drivers_common", tests);
}
