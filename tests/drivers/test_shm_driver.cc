// SPDX-License-Identifier: Apache-2.0
// drivers/shm with real processes, where its behaviour is its own (the endpoint contract
// every driver keeps is test_driver_contract.cc, run over shm with CMA and with the bounce
// buffer): cancel of a rendezvous send the peer has not read, over CMA and over the bounce
// buffer; back-pressure bounded by the ring and the early-arrival pool; a peer killed with
// SIGKILL (pending operations fail with PEER_FAILURE within the liveness period, what it
// sent before dying is still delivered), a connect that names the missing rank, a peer that
// closes right after its acknowledgement, and segments of a killed run reclaimed by the next
// open.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <vector>

#include "base/params.hh"
#include "driver_test_util.hh"
#include "drivers/shm/shm.hh"
#include "drivers/shm/shm_params.hh"
#include "test_case.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;
using loom::test::store_dir;

namespace {

// Rank 0 withdraws a rendezvous send before rank 1 reads it, and a posted receive; then
// overwrites the send buffer. Rank 1's read of the withdrawn message completes as
// withdrawn (nothing valid delivered) and later messages arrive intact: the ring, the
// ack words and the bounce channel stay in step. No completion ever names a cancelled op.
int cancel_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f    = (*ep)->fast();
    const size_t big = size_t(4) << 20, small = 100, after = size_t(2) << 20;
    std::vector<char> a(big), b(small), d(after), flag(8);
    completion c[4];
    enum : uint64_t {
        t_big   = 10,
        t_small = 11,
        t_never = 12,
        t_go    = 13,
        t_after = 14,
        t_done  = 15
    };
    if (rank == 0) {
        test::fill(a.data(), big, 1);
        test::fill(b.data(), small, 2);
        test::fill(d.data(), after, 3);
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_big, big, a.data(), big, 100) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_small, small, b.data(), small, 101) == 0, "send");
        RANK_CHECK(rank, f.post_recv(f.ctx, 1, t_never, 8, flag.data(), 8, 102) == 0, "recv");
        RANK_CHECK(rank, f.cancel(f.ctx, 100), "the rendezvous send was not pending");
        RANK_CHECK(rank, !f.cancel(f.ctx, 101), "an eager send completes at once");
        RANK_CHECK(rank, f.cancel(f.ctx, 102), "the posted receive was not pending");
        RANK_CHECK(rank, !f.cancel(f.ctx, 100) && !f.cancel(f.ctx, 999), "cancelled twice");
        test::fill(a.data(), big, 77);  // the caller reuses its buffer at once
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_go, 0, nullptr, 0, 103) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_after, after, d.data(), after, 104) == 0, "send");
        RANK_CHECK(rank, f.post_recv(f.ctx, 1, t_done, 0, nullptr, 0, 105) == 0, "recv");
        int seen = 0;
        deadline until(20);
        while (seen < 4 && !until.expired()) {
            int n = test::wait_completions(f, c, 1, until.remaining_s());
            if (n == 1) {
                RANK_CHECK(rank, c[0].cookie == 101 || c[0].cookie >= 103,
                           "completion for cancelled op %llu", (unsigned long long)c[0].cookie);
                RANK_CHECK(rank, c[0].status == 0, "status %d", int(c[0].status));
                ++seen;
            }
        }
        RANK_CHECK(rank, seen == 4, "%d of 4 completions", seen);
        // The withdrawn send is released once rank 1 has seen the revocation.
        deadline drain(5);
        while (f.pending(f.ctx) && !drain.expired()) {
            RANK_CHECK(rank, f.poll(f.ctx, c, 4) == 0, "late completion");
        }
        RANK_CHECK(rank, !f.pending(f.ctx), "the revoked send is never released");
    } else {
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_go, 0, nullptr, 0, 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1 && c[0].status == 0, "go");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_big, big, a.data(), big, 2) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "withdrawn receive");
        RANK_CHECK(rank, c[0].status == LOOM_ERR_PEER_FAILURE && c[0].withdrawn,
                   "status %d withdrawn %d", int(c[0].status), int(c[0].withdrawn));
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_small, small, b.data(), small, 3) == 0, "recv");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_after, after, d.data(), after, 4) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 2, 20) == 2, "later messages");
        RANK_CHECK(rank, c[0].status == 0 && c[1].status == 0, "later status");
        RANK_CHECK(rank, test::check(b.data(), small, 2) < 0, "eager message corrupted");
        RANK_CHECK(rank, test::check(d.data(), after, 3) < 0, "later message corrupted");
        RANK_CHECK(rank, f.post_send(f.ctx, 0, t_done, 0, nullptr, 0, 5) == 0, "send");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "done");
    }
    return 0;
}

void run_cancel(const char* label) {
    EXPECT_PASSED(test::run_job(label, 2, 50, cancel_rank));
}

constexpr int bp_msgs = 5000;

// Rank 0 posts 5000 sends (every 500th a rendezvous) while rank 1 polls without posting:
// only ring + early pool can complete, the rest wait. Then rank 1 posts every receive in
// random order and everything arrives intact.
int backpressure_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    auto len      = [](int k) { return k % 500 == 0 ? size_t(10000) : size_t(64); };
    std::vector<std::vector<char>> bufs(bp_msgs);
    std::vector<completion> c(bp_msgs);
    if (rank == 0) {
        for (int k = 0; k < bp_msgs; ++k) {
            bufs[k].resize(len(k));
            test::fill(bufs[k].data(), len(k), 7000 + k);
            RANK_CHECK(rank, f.post_send(f.ctx, 1, k, 0, bufs[k].data(), len(k), k) == 0, "send");
        }
        int early     = test::wait_completions(f, c.data(), bp_msgs, 0.3);
        int64_t slots = drivers::shm::params::ring_slots.get();
        int64_t bound = slots + drivers::shm::params::unexpected.get();
        RANK_CHECK(rank, early >= slots - 1 && early <= bound,
                   "%d sends completed while the receiver posted nothing (bound %lld)", early,
                   (long long)bound);
        RANK_CHECK(rank, store.set("stalled", std::to_string(early)).is_ok(), "store");
        int rest = test::wait_completions(f, c.data() + early, bp_msgs - early, 30);
        RANK_CHECK(rank, early + rest == bp_msgs, "only %d sends completed", early + rest);
        return 0;
    }
    test::poll_for(f, 0.3, [&](const completion&) {});
    RANK_CHECK(rank, store.get("stalled", 20).is_ok(), "rank 0 never stalled");
    std::vector<int> order(bp_msgs);
    for (int k = 0; k < bp_msgs; ++k) {
        order[k] = k;
    }
    std::shuffle(order.begin(), order.end(), std::mt19937(3));
    for (int k : order) {
        bufs[k].assign(len(k), 0);
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, k, 0, bufs[k].data(), len(k), k) == 0, "recv");
    }
    int n = test::wait_completions(f, c.data(), bp_msgs, 30);
    RANK_CHECK(rank, n == bp_msgs, "only %d receives completed", n);
    for (int i = 0; i < n; ++i) {
        int k = int(c[i].cookie);
        RANK_CHECK(rank, c[i].status == 0, "receive %d: status %d", k, int(c[i].status));
        RANK_CHECK(rank, test::check(bufs[k].data(), len(k), 7000 + k) < 0, "message %d", k);
    }
    return 0;
}

// Any segment of (job, rank), whichever process made it.
bool segment_exists(const std::string& job, int rank) {
    std::string stem = drivers::shm::segment_stem(job, rank);
    DIR* dir         = ::opendir("/dev/shm");
    bool found       = false;
    while (dir != nullptr && !found) {
        struct dirent* e = ::readdir(dir);
        if (e == nullptr) {
            break;
        }
        found = std::string_view(e->d_name).starts_with(stem);
    }
    if (dir != nullptr) {
        ::closedir(dir);
    }
    return found;
}

// Rank 1 sends one eager message and dies 50 ms after rank 0 posted a receive and a
// rendezvous send toward it; both must fail soon after (the liveness period is 5 ms), and
// the message rank 1 sent before dying is still delivered.
int dead_peer_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    completion c[4];
    std::vector<char> msg(100), big(1 << 20);
    if (rank == 1) {
        test::fill(msg.data(), msg.size(), 5);
        RANK_CHECK(rank, f.post_send(f.ctx, 0, 5, 0, msg.data(), msg.size(), 1) == 0, "send");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 5) == 1, "send completion");
        RANK_CHECK(rank, store.get("posted", 10).is_ok(), "rank 0 never posted");
        ::usleep(50000);
        ::raise(SIGKILL);
    }
    double t0 = now_s();
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 1, 0, msg.data(), msg.size(), 1) == 0, "recv");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2, 0, big.data(), big.size(), 2) == 0, "send");
    RANK_CHECK(rank, store.set("posted", "1").is_ok(), "store");
    int n          = test::wait_completions(f, c, 2, 10);
    double elapsed = now_s() - t0;
    RANK_CHECK(rank, n == 2, "only %d of 2 operations completed after the peer died", n);
    for (int i = 0; i < n; ++i) {
        RANK_CHECK(rank, c[i].status == LOOM_ERR_PEER_FAILURE && c[i].peer == 1,
                   "cookie %llu: status %d", (unsigned long long)c[i].cookie, int(c[i].status));
    }
    RANK_CHECK(rank, elapsed < 2.0, "peer failure took %.3f s", elapsed);
    // What the peer published before it died is still delivered...
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 5, 0, msg.data(), msg.size(), 3) == 0, "recv");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 1) == 1 && c[0].status == 0, "early msg");
    RANK_CHECK(rank, test::check(msg.data(), msg.size(), 5) < 0, "early message content");
    // ...and anything new toward it fails at once.
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 6, 0, msg.data(), msg.size(), 4) == 0, "recv");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 1) == 1, "late receive");
    RANK_CHECK(rank, c[0].status == LOOM_ERR_PEER_FAILURE, "late receive: %d", int(c[0].status));
    std::printf(
        "# rank 0: operations failed %.1f ms after posting (peer killed 50 ms "
        "after)\n",
        elapsed * 1e3);
    return 0;
}

// Rank 1 receives a rendezvous message (writing rank 0's ack) and closes at once; rank 0
// checks liveness on every poll, so it often sees `closed` before it has looked at the ack.
// The ack came first, so the send must succeed.
int close_after_ack_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<char> big(1 << 16, 'x');
    completion c[1];
    if (rank == 1) {
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 1, 0, big.data(), big.size(), 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 10) == 1 && c[0].status == 0, "recv");
        (*ep)->close();
        return 0;
    }
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 1, 0, big.data(), big.size(), 1) == 0, "send");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 10) == 1, "send completion");
    RANK_CHECK(rank, c[0].status == LOOM_SUCCESS, "acked send failed: status %d", int(c[0].status));
    return 0;
}

}  // namespace

static void cancel_withdraws_sends_and_receives_bounce(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_CMA", "off").is_ok());
    run_cancel("cxb");
    assert_true(reg.set("LOOM_SHM_CMA", "auto").is_ok());
}

static void backpressure_thousands_of_early_messages(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_MAX_OPS", "8192").is_ok());
    std::string why = test::run_job("bp", 2, 55, backpressure_rank);
    assert_true(reg.set("LOOM_SHM_MAX_OPS", "4096").is_ok());
    EXPECT_PASSED(why);
}

static void killed_peer_fails_pending_operations(void**) {
    store_dir dir("dead");
    std::string job = test::unique_job("dead");
    std::string why =
        test::run_ranks(2, 30, [&](int r) { return dead_peer_rank(r, job, dir.path); });
    if (why != "rank 1 killed by signal 9; ") {
        LOOM_FAIL("expected only rank 1 to die: " + why);
    }
    // Rank 1's segment is left behind by the kill; the next open reclaims it.
    drivers::shm::reclaim_dead_segments();
    assert_false(segment_exists(job, 1));
}

static void peer_closing_right_after_its_ack_does_not_fail_the_send(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_LIVENESS_MS", "0.000001").is_ok());
    std::string why;
    for (int round = 0; round < 60 && why.empty(); ++round) {
        why = test::run_job("ack" + std::to_string(round), 2, 20, close_after_ack_rank);
    }
    assert_true(reg.set("LOOM_SHM_LIVENESS_MS", "5").is_ok());
    EXPECT_PASSED(why);
}

static void connect_names_the_missing_rank(void**) {
    store_dir dir("missing");
    file_store store(dir.path);
    double t0 = now_s();
    auto ep   = test::open_connected("shm", 0, 3, test::unique_job("missing"), &store, 0.5);
    assert_false(ep.is_ok());
    assert_int_equal(ep.error().code(), LOOM_ERR_TIMEOUT);
    const std::string& m = ep.error().message();
    loom::test::expect_has(m, "ranks 1,2 missing");  // every missing rank, not the first
    assert_true(now_s() - t0 < 3.0);
}

static void killed_run_segment_is_reclaimed_by_next_open(void**) {
    std::string job = test::unique_job("crash");
    int ready[2];
    assert_int_equal(::pipe(ready), 0);
    pid_t child = ::fork();
    if (child == 0) {
        auto ep = test::open_connected("shm", 0, 1, job, nullptr);
        char ok = ep.is_ok() ? 'y' : 'n';
        (void)!::write(ready[1], &ok, 1);
        ::pause();  // until SIGKILL
        ::_exit(0);
    }
    char ok = 0;
    assert_int_equal(::read(ready[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    assert_true(segment_exists(job, 0));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::close(ready[0]);
    ::close(ready[1]);
    assert_true(segment_exists(job, 0));  // the crash left it behind
    // The next open (another job) scans /dev/shm and unlinks it: its owner pid is dead.
    std::string next = test::unique_job("next");
    auto ep          = test::open_connected("shm", 0, 1, next, nullptr);
    assert_true(ep.is_ok());
    assert_false(segment_exists(job, 0));
    // A live owner's segment survives the scan, and its name cannot be taken twice.
    auto other = test::open_connected("shm", 0, 1, test::unique_job("other"), nullptr);
    assert_true(other.is_ok());
    assert_true(segment_exists(next, 0));
    auto twice = test::open_connected("shm", 0, 1, next, nullptr);
    assert_false(twice.is_ok());
    loom::test::expect_has(twice.error().message(), "owner is alive");
    // Closing unlinks; the crashed job's name is free again.
    (*ep)->close();
    assert_false(segment_exists(next, 0));
    assert_true(test::open_connected("shm", 0, 1, job, nullptr).is_ok());
}

LOOM_TEST_MAIN("drivers_shm", cmocka_unit_test(backpressure_thousands_of_early_messages),
               LOOM_CASE(cancel_withdraws_sends_and_receives_cma, run_cancel("cxc")),
               cmocka_unit_test(cancel_withdraws_sends_and_receives_bounce),
               cmocka_unit_test(killed_peer_fails_pending_operations),
               cmocka_unit_test(peer_closing_right_after_its_ack_does_not_fail_the_send),
               cmocka_unit_test(connect_names_the_missing_rank),
               cmocka_unit_test(killed_run_segment_is_reclaimed_by_next_open))
