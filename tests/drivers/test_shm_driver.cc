// drivers/shm with real processes, where its behaviour is its own (the endpoint contract
// every driver keeps is test_driver_contract.cc, run over shm with CMA and with the bounce
// buffer): cancel of a rendezvous send the peer has not read, over CMA and over the bounce
// buffer, and back-pressure bounded by the ring and the early-arrival pool.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/params.hh"
#include "driver_test_util.hh"
#include "drivers/shm/shm_params.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

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

}  // namespace

static void cancel_withdraws_sends_and_receives_cma(void**) {
    run_cancel("cxc");
}

static void cancel_withdraws_sends_and_receives_bounce(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_CMA", "off").is_ok());
    run_cancel("cxb");
    assert_true(reg.set("LOOM_SHM_CMA", "auto").is_ok());
}

namespace {

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

}  // namespace

static void backpressure_thousands_of_early_messages(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_MAX_OPS", "8192").is_ok());
    std::string why = test::run_job("bp", 2, 55, backpressure_rank);
    assert_true(reg.set("LOOM_SHM_MAX_OPS", "4096").is_ok());
    EXPECT_PASSED(why);
}

LOOM_TEST_MAIN("drivers_shm", cmocka_unit_test(backpressure_thousands_of_early_messages),
               cmocka_unit_test(cancel_withdraws_sends_and_receives_cma),
               cmocka_unit_test(cancel_withdraws_sends_and_receives_bounce))
