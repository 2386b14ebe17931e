// SPDX-License-Identifier: Apache-2.0
// drivers/ofi's failure behaviour over one provider (argv: NAME=VALUE parameters, as the
// contract test takes them), with real processes: a peer killed with SIGKILL while a large
// message to it is under way completes every pending operation toward it with
// PEER_FAILURE within the deadline (the liveness probe's sends fail or are refused; see
// drivers/ofi/ofi.hh), and the message names the peer; a rank with only a receive posted
// toward the killed peer learns it too; later posts toward it fail at once. Cancelled sends
// (driver.hh) arrive whole, or not at all, or withdrawn, and never with the bytes written
// after the cancel, and later messages arrive intact. Small sends go inline, needing no
// send buffer. meson runs it
// over the connection-oriented providers (tcp;ofi_rxm, net).
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "../drivers_tcp/tcp_test_util.hh"
#include "base/params.hh"
#include "drivers/ofi/ofi.hh"
#include "test_case.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

result<std::unique_ptr<drivers::endpoint>> open_rank(int rank, const std::string& job,
                                                     kv_store* store) {
    return test::open_named("ofi", "", rank, 2, job, store);
}

// Rank 1 is the victim: it posts a receive of 64 MiB (the rendezvous rank 0 starts), polls
// slowly and publishes its pid; rank 0 kills it with a receive, that send and a second
// (never received) 64 MiB send pending. With `receive_only`, rank 0 has only a receive.
int killed_rank(int rank, const std::string& job, const std::string& dir, bool receive_only) {
    file_store store(dir);
    auto ep = open_rank(rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<uint8_t> big(size_t{64} << 20), big2(size_t{64} << 20);
    test::tally t(8);
    if (rank == 1) {
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 10, 0, big.data(), big.size(), 0) == 0, "recv");
        RANK_CHECK(rank, store.set("pid", std::to_string(::getpid())).is_ok(), "pid");
        deadline until(20);
        while (!until.expired()) {
            t.poll(f, 8);
            ::usleep(10000);
        }
        return 1;  // should have been killed
    }
    auto pid = store.get("pid", 20);
    RANK_CHECK(rank, pid.is_ok(), "no pid");
    size_t n = receive_only ? 1 : 3;
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 1, 0, big2.data(), 8, 0) == 0, "recv");
    if (!receive_only) {
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 10, 0, big.data(), big.size(), 1) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 11, 0, big2.data(), big2.size(), 2) == 0, "send");
    }
    test::poll_for(f, 0.05, [&](const completion& c) { t.add(c); });  // the transfer starts
    // The first send may be read whole before the kill; what is pending must fail.
    size_t before = t.done;
    RANK_CHECK(rank, t.count[0] == 0 && (receive_only || t.count[2] == 0),
               "the receive or the unread send completed before the kill");
    ::kill(pid_t(std::stol(*pid)), SIGKILL);
    double t0 = now_s();
    RANK_CHECK(rank, t.wait(f, n, 15), "only %zu of %zu operations completed", t.done, n);
    double elapsed = now_s() - t0;
    for (size_t i = 0; i < n; ++i) {
        bool done_before = i == 1 && before > 0;
        RANK_CHECK(rank,
                   done_before || (t.status[i] == LOOM_ERR_PEER_FAILURE && t.last[i].peer == 1),
                   "cookie %zu: status %d", i, t.status[i]);
    }
    auto* ofi     = dynamic_cast<drivers::ofi::ofi_endpoint*>(ep->get());
    const auto& w = ofi->peer_status(1);
    RANK_CHECK(rank, w.code() == LOOM_ERR_PEER_FAILURE, "peer_status %d", w.code());
    RANK_CHECK(rank, w.message().find("rank 0: peer 1: ") != std::string::npos,
               "message does not name the peer: %s", w.message().c_str());
    std::printf("# rank 0 over %s: %s (after %.1f ms)\n", ofi->provider().c_str(),
                w.message().c_str(), elapsed * 1e3);
    // New operations toward the dead peer fail at once.
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 12, 0, big.data(), 8, 3) == 0, "send");
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 13, 0, big.data(), 8, 4) == 0, "recv");
    RANK_CHECK(rank, t.wait(f, n + 2, 1), "late operations did not complete");
    RANK_CHECK(rank, t.status[3] == LOOM_ERR_PEER_FAILURE && t.status[4] == LOOM_ERR_PEER_FAILURE,
               "late operations: %d %d", t.status[3], t.status[4]);
    return 0;
}

// ---- cancel ----

constexpr size_t cancel_big = size_t{4} << 20, cancel_small = 1000, later_bytes = 300 * 1024;
constexpr int n_cancel_rounds = 3;
// Round k: rank 0 cancels after polling this long. Rank 1 polls all along: ofi's cancel of
// a rendezvous send waits for the receiver's answer (drivers/ofi/ofi.hh).
constexpr double cancel_after_s[n_cancel_rounds] = {0, 0.001, 0.005};

// Rank 0 posts a 4 MiB (rendezvous) and a 1000-byte (eager) send, cancels both, overwrites
// and frees their buffers, then sends a later message. Rank 1 gets each cancelled message
// whole, or nothing, or (the rendezvous revoked while it was being read) PEER_FAILURE with
// `withdrawn`; the later message arrives intact. Cookies: 3 k + {big, small, later}.
int cancel_send_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = open_rank(rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    test::tally t(3 * n_cancel_rounds);
    std::vector<bool> withdrawn(3 * n_cancel_rounds, false);
    auto add = [&](const completion& c) {
        t.add(c);
        if (c.cookie < withdrawn.size()) {
            withdrawn[c.cookie] = c.withdrawn;
        }
    };
    for (int k = 0; k < n_cancel_rounds; ++k) {
        uint64_t tag   = 100 * uint64_t(k + 1);
        size_t c0      = size_t(3 * k);
        std::string ks = std::to_string(k);
        if (rank == 0) {
            RANK_CHECK(rank, store.get("ready/" + ks, 20).is_ok(), "round %d: rank 1 not ready", k);
            std::vector<uint8_t> big(cancel_big), small(cancel_small), later(later_bytes);
            test::fill(big.data(), big.size(), tag + 1);
            test::fill(small.data(), small.size(), tag + 2);
            test::fill(later.data(), later.size(), tag + 3);
            RANK_CHECK(rank, f.post_send(f.ctx, 1, tag + 1, 0, big.data(), big.size(), c0) == 0,
                       "send");
            test::poll_for(f, cancel_after_s[k], add);
            RANK_CHECK(rank,
                       f.post_send(f.ctx, 1, tag + 2, 0, small.data(), small.size(), c0 + 1) == 0,
                       "send");
            bool c_big   = f.cancel(f.ctx, c0);
            bool c_small = f.cancel(f.ctx, c0 + 1);
            test::fill(big.data(), big.size(), tag + 50);
            std::vector<uint8_t>().swap(big);  // unmapped: a late read would fault
            RANK_CHECK(rank, !f.cancel(f.ctx, c0) && !f.cancel(f.ctx, c0 + 1),
                       "a second cancel found something");
            RANK_CHECK(rank, store.set("cancelled/" + ks, c_big ? "1" : "0").is_ok(), "set");
            RANK_CHECK(rank,
                       f.post_send(f.ctx, 1, tag + 3, 0, later.data(), later.size(), c0 + 2) == 0,
                       "send");
            RANK_CHECK(rank, t.poll_until(f, store, "checked/" + ks, 30),
                       "round %d: rank 1 never checked", k);
            RANK_CHECK(rank, t.count[c0 + 2] == 1 && t.status[c0 + 2] == 0, "round %d: later", k);
            RANK_CHECK(rank, t.count[c0] == (c_big ? 0 : 1) && t.count[c0 + 1] == (c_small ? 0 : 1),
                       "round %d: cancelled %d %d, completions %d %d", k, c_big, c_small,
                       t.count[c0], t.count[c0 + 1]);
            continue;
        }
        std::vector<uint8_t> big(cancel_big, 0xee), small(cancel_small, 0xee);
        std::vector<uint8_t> later(later_bytes, 0xee);
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, tag + 1, 0, big.data(), big.size(), c0) == 0,
                   "recv");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, tag + 2, 0, small.data(), small.size(), c0 + 1) == 0,
                   "recv");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, tag + 3, 0, later.data(), later.size(), c0 + 2) == 0,
                   "recv");
        RANK_CHECK(rank, store.set("ready/" + ks, "1").is_ok(), "set");
        deadline until(20);
        while (t.count[c0 + 2] == 0) {
            RANK_CHECK(rank, !until.expired(), "round %d: the later message did not arrive", k);
            test::poll_for(f, 0.0005, add);
        }
        test::poll_for(f, 0.2, add);
        RANK_CHECK(rank,
                   t.status[c0 + 2] == 0 && test::check(later.data(), later.size(), tag + 3) < 0,
                   "round %d: later message", k);
        bool got_big = t.count[c0] > 0 && t.status[c0] == 0;
        RANK_CHECK(rank,
                   t.count[c0] == 0 || t.status[c0] == 0 ||
                       (t.status[c0] == LOOM_ERR_PEER_FAILURE && withdrawn[c0]),
                   "round %d: big: status %d", k, t.status[c0]);
        RANK_CHECK(rank, !got_big || test::check(big.data(), big.size(), tag + 1) < 0,
                   "round %d: the cancelled message came with other bytes", k);
        RANK_CHECK(rank,
                   t.count[c0 + 1] == 0 || test::check(small.data(), small.size(), tag + 2) < 0,
                   "round %d: small differs", k);
        RANK_CHECK(rank, t.count[c0] > 0 || f.cancel(f.ctx, c0), "round %d: big not pending", k);
        RANK_CHECK(rank, t.count[c0 + 1] > 0 || f.cancel(f.ctx, c0 + 1), "round %d: small", k);
        std::printf("# round %d: rank 0 withdrew big %s; rank 1 got big %s\n", k,
                    store.get("cancelled/" + ks, 0)->c_str(),
                    got_big           ? "whole"
                    : t.count[c0] > 0 ? "withdrawn"
                                      : "nothing");
        RANK_CHECK(rank, store.set("checked/" + ks, "1").is_ok(), "set");
    }
    RANK_CHECK(rank, t.finish(f, store, rank), "peer not done");
    return 0;
}

// With one send buffer (LOOM_OFI_SEND_QUEUE=1), rank 0 posts many 8-byte sends without
// polling: each goes inline (fi_tinject, header and payload within the provider's inject
// size) and takes no send buffer, so none is refused with NO_RESOURCE; all arrive intact.
constexpr int inline_sends = 64;

int inline_send_rank(int rank, const std::string& job, const std::string& dir) {
    RANK_CHECK(rank, params::registry::global().set("LOOM_OFI_SEND_QUEUE", "1").is_ok(), "set");
    file_store store(dir);
    auto ep = open_rank(rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<uint64_t> values(inline_sends);
    uint64_t ack = 0;
    test::tally t(inline_sends + 1);
    if (rank == 1) {
        for (int i = 0; i < inline_sends; ++i) {
            RANK_CHECK(
                rank,
                f.post_recv(f.ctx, 0, uint64_t(i), 0, &values[size_t(i)], 8, uint64_t(i)) == 0,
                "recv %d", i);
        }
        RANK_CHECK(rank, t.wait(f, inline_sends, 20), "%zu of %d arrived", t.done, inline_sends);
        for (int i = 0; i < inline_sends; ++i) {
            RANK_CHECK(rank, t.status[size_t(i)] == 0 && values[size_t(i)] == 1000 + uint64_t(i),
                       "message %d: status %d value %llu", i, t.status[size_t(i)],
                       (unsigned long long)values[size_t(i)]);
        }
        RANK_CHECK(rank, f.post_send(f.ctx, 0, 1000, 0, &ack, 8, inline_sends) == 0, "ack");
        RANK_CHECK(rank, t.wait(f, inline_sends + 1, 20), "ack not sent");
        return 0;
    }
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 1000, 0, &ack, 8, inline_sends) == 0, "recv");
    for (int i = 0; i < inline_sends; ++i) {
        values[size_t(i)] = 1000 + uint64_t(i);
        loom_status_t st =
            f.post_send(f.ctx, 1, uint64_t(i), 0, &values[size_t(i)], 8, uint64_t(i));
        RANK_CHECK(rank, st == LOOM_SUCCESS, "send %d without polling: status %d", i, st);
    }
    RANK_CHECK(rank, t.wait(f, inline_sends + 1, 20), "%zu of %d completed", t.done,
               inline_sends + 1);
    return 0;
}

void run_killed(const char* label, bool receive_only) {
    std::string why = test::run_job(label, 2, 40, [&](int r, auto& job, auto& dir) {
        return killed_rank(r, job, dir, receive_only);
    });
    if (why != "rank 1 killed by signal 9; ") {
        LOOM_FAIL("expected only rank 1 to die: " + why);
    }
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg(argv[i]);
        size_t eq = arg.find('=');
        status st = eq == std::string::npos
                        ? invalid_argument("not NAME=VALUE")
                        : params::registry::global().set(arg.substr(0, eq), arg.substr(eq + 1));
        if (!st.is_ok()) {
            std::fprintf(stderr, "%s: %s\n", argv[i], st.to_string().c_str());
            return 2;
        }
    }
    const CMUnitTest tests[] = {
        LOOM_CASE(killed_peer_fails_pending_rendezvous, run_killed("killed", false)),
        LOOM_CASE(killed_peer_fails_a_posted_receive, run_killed("killed_recv", true)),
        LOOM_CASE(cancelled_sends_arrive_whole_or_not_at_all,
                  EXPECT_PASSED(test::run_job("cancel", 2, 60, cancel_send_rank))),
        LOOM_CASE(small_sends_go_inline_without_send_buffers,
                  EXPECT_PASSED(test::run_job("inline", 2, 40, inline_send_rank))),
    };
    return LOOM_RUN_TESTS("drivers_ofi_failures", tests);
}
