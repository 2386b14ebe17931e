// SPDX-License-Identifier: Apache-2.0
// drivers/self: the loopback driver, and the reference for matching semantics
// (drivers/common/loopback.hh):
// receives before and after their send, tags matched not FIFO, length/immediate mismatch
// delivers nothing, control notices, completion order, pool exhaustion, wrong peers.
#include <cstring>
#include <vector>

#include "base/params.hh"
#include "driver_test_util.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;

namespace {

std::unique_ptr<drivers::endpoint> open_self_ep() {
    auto ep = test::open_connected("self", 0, 1, "", nullptr);
    assert_true(ep.is_ok());
    return std::move(ep).value();
}

}  // namespace

static void receive_posted_before_and_after_its_send(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    std::vector<char> a(100), b(100), ra(100, 0), rb(100, 0);
    test::fill(a.data(), a.size(), 1);
    test::fill(b.data(), b.size(), 2);
    // Receive first, then send.
    assert_int_equal(f.post_recv(f.ctx, 0, 7, 70, ra.data(), ra.size(), 11), LOOM_SUCCESS);
    assert_int_equal(f.post_send(f.ctx, 0, 7, 70, a.data(), a.size(), 12), LOOM_SUCCESS);
    // Send first, then receive: the send waits for its receive.
    assert_int_equal(f.post_send(f.ctx, 0, 8, 80, b.data(), b.size(), 13), LOOM_SUCCESS);
    assert_true(f.pending(f.ctx));
    assert_int_equal(f.post_recv(f.ctx, 0, 8, 80, rb.data(), rb.size(), 14), LOOM_SUCCESS);
    completion c[8];
    assert_int_equal(test::wait_completions(f, c, 4, 1.0), 4);
    // In completion order; when one match completes two, the first-posted comes first.
    uint64_t want[4] = {11, 12, 13, 14};
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(c[i].cookie, want[i]);
        assert_int_equal(c[i].status, LOOM_SUCCESS);
        assert_int_equal(c[i].bytes, 100);
        assert_int_equal(c[i].peer, 0);
    }
    assert_int_equal(c[0].tag, 7);
    assert_int_equal(c[0].imm, 70);
    assert_int_equal(test::check(ra.data(), ra.size(), 1), -1);
    assert_int_equal(test::check(rb.data(), rb.size(), 2), -1);
    assert_false(f.pending(f.ctx));
}

static void tags_are_matched_not_fifo(void**) {
    auto ep         = open_self_ep();
    const auto& f   = ep->fast();
    constexpr int n = 16;
    std::vector<std::vector<char>> out(n, std::vector<char>(33)), in(n, std::vector<char>(33));
    for (int k = 0; k < n; ++k) {
        test::fill(out[k].data(), 33, 100 + k);
        assert_int_equal(f.post_send(f.ctx, 0, 1000 + k, 0, out[k].data(), 33, k), LOOM_SUCCESS);
    }
    for (int k = n - 1; k >= 0; --k) {  // reverse order
        assert_int_equal(f.post_recv(f.ctx, 0, 1000 + k, 0, in[k].data(), 33, 100 + k),
                         LOOM_SUCCESS);
    }
    completion c[2 * n];
    assert_int_equal(test::wait_completions(f, c, 2 * n, 1.0), 2 * n);
    for (int k = 0; k < n; ++k) {
        assert_int_equal(test::check(in[k].data(), 33, 100 + k), -1);
    }
}

static void mismatch_in_length_or_imm_delivers_nothing(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    std::vector<char> s(64), r(64, 'z');
    test::fill(s.data(), s.size(), 5);
    // Longer than the receive.
    assert_int_equal(f.post_recv(f.ctx, 0, 1, 9, r.data(), 32, 1), LOOM_SUCCESS);
    assert_int_equal(f.post_send(f.ctx, 0, 1, 9, s.data(), 64, 2), LOOM_SUCCESS);
    // Shorter than the receive (receives are exact).
    assert_int_equal(f.post_recv(f.ctx, 0, 2, 9, r.data(), 64, 3), LOOM_SUCCESS);
    assert_int_equal(f.post_send(f.ctx, 0, 2, 9, s.data(), 32, 4), LOOM_SUCCESS);
    // Another immediate (another call's message).
    assert_int_equal(f.post_recv(f.ctx, 0, 3, 9, r.data(), 64, 5), LOOM_SUCCESS);
    assert_int_equal(f.post_send(f.ctx, 0, 3, 10, s.data(), 64, 6), LOOM_SUCCESS);
    completion c[6];
    assert_int_equal(test::wait_completions(f, c, 6, 1.0), 6);
    for (int i = 0; i < 6; i += 2) {
        assert_int_equal(c[i].status, LOOM_ERR_MISMATCH);
        assert_int_equal(c[i].bytes, 0);
        assert_int_equal(c[i + 1].status, LOOM_SUCCESS);  // the send itself went
    }
    assert_int_equal(c[4].imm, 10);  // the immediate that came
    for (char x : r) {
        assert_int_equal(x, 'z');
    }
}

static void control_notice_is_unsolicited_and_never_matched(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    uint64_t tag  = drivers::control_tag_bit | 42;
    char dummy    = 0;
    assert_int_equal(f.post_recv(f.ctx, 0, tag, 0, &dummy, 1, 1), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(f.post_send(f.ctx, 0, tag, 0xabc, nullptr, 0, drivers::control_cookie),
                     LOOM_SUCCESS);
    completion c[4];
    assert_int_equal(test::wait_completions(f, c, 4, 0.2), 1);  // no send completion
    assert_int_equal(c[0].cookie, drivers::control_cookie);
    assert_int_equal(c[0].tag, tag);
    assert_int_equal(c[0].imm, 0xabc);
    assert_int_equal(c[0].peer, 0);
}

static void zero_bytes_and_full_pool(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    assert_int_equal(f.post_send(f.ctx, 0, 1, 0, nullptr, 0, 1), LOOM_SUCCESS);
    assert_int_equal(f.post_recv(f.ctx, 0, 1, 0, nullptr, 0, 2), LOOM_SUCCESS);
    completion c[2];
    assert_int_equal(test::wait_completions(f, c, 2, 1.0), 2);
    assert_int_equal(c[1].status, LOOM_SUCCESS);
    assert_int_equal(c[1].bytes, 0);
    // A full pool says NO_RESOURCE, and frees up when completions are taken.
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SELF_MAX_OPS", "4").is_ok());
    auto small    = open_self_ep();
    const auto& g = small->fast();
    char b        = 0;
    for (int k = 0; k < 4; ++k) {
        assert_int_equal(g.post_recv(g.ctx, 0, 10 + k, 0, &b, 1, k), LOOM_SUCCESS);
    }
    assert_int_equal(g.post_recv(g.ctx, 0, 99, 0, &b, 1, 9), LOOM_ERR_NO_RESOURCE);
    assert_true(reg.set("LOOM_SELF_MAX_OPS", "4096").is_ok());
}

static void other_peers_and_sizes_are_refused(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    char b        = 0;
    assert_int_equal(f.post_send(f.ctx, 1, 1, 0, &b, 1, 1), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(f.post_recv(f.ctx, -1, 1, 0, &b, 1, 1), LOOM_ERR_INVALID_ARGUMENT);
    drivers::endpoint_config cfg;
    cfg.rank = 0;
    cfg.size = 2;
    auto two = drivers::open_self(cfg);
    assert_false(two.is_ok());
    assert_int_equal(two.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(two.error().message().c_str(), "only to itself"));
    assert_string_equal(ep->capabilities().name, "self");
}

static void close_fails_what_is_pending(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    char b        = 0;
    assert_int_equal(f.post_recv(f.ctx, 0, 1, 0, &b, 1, 77), LOOM_SUCCESS);
    ep->close();
    completion c[1];
    assert_int_equal(test::wait_completions(f, c, 1, 0.2), 1);
    assert_int_equal(c[0].cookie, 77);
    assert_int_equal(c[0].status, LOOM_ERR_PEER_FAILURE);
}

// A withdrawn operation frees its pool entry, never completes and is never matched: a
// later receive of the same tag waits for a new send.
static void cancel_withdraws_unmatched_operations(void**) {
    auto ep       = open_self_ep();
    const auto& f = ep->fast();
    char s = 's', r = 'r';
    assert_int_equal(f.post_send(f.ctx, 0, 5, 1, &s, 1, 10), LOOM_SUCCESS);
    assert_int_equal(f.post_recv(f.ctx, 0, 6, 1, &r, 1, 11), LOOM_SUCCESS);
    assert_true(f.cancel(f.ctx, 10));
    assert_true(f.cancel(f.ctx, 11));
    assert_false(f.cancel(f.ctx, 10));
    assert_false(f.cancel(f.ctx, 12));
    assert_false(f.pending(f.ctx));
    completion c[2];
    assert_int_equal(f.poll(f.ctx, c, 2), 0);
    assert_int_equal(f.post_recv(f.ctx, 0, 5, 1, &r, 1, 13), LOOM_SUCCESS);
    assert_int_equal(f.poll(f.ctx, c, 2), 0);  // the cancelled send is gone
    char t = 't';
    assert_int_equal(f.post_send(f.ctx, 0, 5, 1, &t, 1, 14), LOOM_SUCCESS);
    assert_int_equal(test::wait_completions(f, c, 2, 0.2), 2);
    assert_int_equal(r, 't');
    assert_int_equal(c[0].cookie + c[1].cookie, 13 + 14);
    // Matched operations already completed: nothing to withdraw.
    assert_false(f.cancel(f.ctx, 13));
}

LOOM_TEST_MAIN("drivers_self", cmocka_unit_test(receive_posted_before_and_after_its_send),
               cmocka_unit_test(tags_are_matched_not_fifo),
               cmocka_unit_test(mismatch_in_length_or_imm_delivers_nothing),
               cmocka_unit_test(control_notice_is_unsolicited_and_never_matched),
               cmocka_unit_test(zero_bytes_and_full_pool),
               cmocka_unit_test(other_peers_and_sizes_are_refused),
               cmocka_unit_test(close_fails_what_is_pending),
               cmocka_unit_test(cancel_withdraws_unmatched_operations))
