// The drivers' wakers (drivers/waker.hh) with real processes, over shm and tcp: a rank that
// sleeps on its endpoint (arm, one poll pass, sleep with a 5 s timeout) is woken by its
// peer's send within milliseconds, not at the timeout. Each case waits 200 ms before the
// event so the sleeper is surely asleep: an eager message (the ring or the socket rings),
// and a large one whose sender sleeps until the receiver's acknowledgement (shm: the ack
// word rings; tcp: the clear-to-send arrives on the socket). And a ring from another thread
// of the sleeper's own process (work handed over) ends its sleep just as soon.
#include <time.h>

#include <cstring>
#include <thread>
#include <vector>

#include "../drivers/wake_test_util.hh"
#include "tcp_test_util.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

using test::wake::hold_s;
using test::wake::late_s;
using test::wake::sleep_timeout_ns;
using test::wake::sleep_until_completion;

result<std::unique_ptr<drivers::endpoint>> open_driver(const std::string& driver, int rank,
                                                       const std::string& job, kv_store* store) {
    if (driver == "tcp") {
        test::use_loopback();
        return test::open_tcp(rank, 2, job, store);
    }
    return test::open_connected("shm", rank, 2, job, store);
}

// Rank 1 sleeps on a receive; rank 0 sends after hold_s.
int eager_rank(const std::string& driver, int rank, drivers::endpoint& ep) {
    return test::wake::eager_rounds(ep, driver, rank);
}

// Rank 0 sends a large message and sleeps until it completes; rank 1 posts the receive
// after hold_s: the completion follows the receiver's acknowledgement, not the timeout.
int rendezvous_rank(const std::string& driver, int rank, drivers::endpoint& ep) {
    const auto& f = ep.fast();
    size_t n      = size_t(4) << 20;  // beyond every eager limit
    std::vector<char> buf(n);
    completion c[1];
    double posted = 0;
    if (rank == 1) {
        test::sleep_s(hold_s);
        posted = now_s();
        // The post time goes back in a small message, so rank 0 can tell how late it woke.
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 1, 0, buf.data(), n, 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "recv completion");
        RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].bytes == n, "recv status");
        RANK_CHECK(rank, f.post_send(f.ctx, 0, 2, 0, &posted, sizeof posted, 2) == 0, "send");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "send completion");
        return 0;
    }
    test::fill(buf.data(), n, 3);
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 1, 0, buf.data(), n, 1) == 0, "send");
    int sleeps = 0;
    RANK_CHECK(rank, sleep_until_completion(ep, c, &sleeps) == 1, "no completion");
    double done = now_s();
    RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].cookie == 1, "send status");
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 2, 0, &posted, sizeof posted, 2) == 0, "recv");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "recv completion");
    RANK_CHECK(rank, sleeps >= 1, "the sender never slept");
    RANK_CHECK(rank, done - posted < late_s, "woken %.1f ms after the receive was posted",
               (done - posted) * 1e3);
    std::printf("# %s rendezvous: woken %.3f ms after the receive was posted (%d sleeps)\n",
                driver.c_str(), (done - posted) * 1e3, sleeps);
    return 0;
}

// Rank 1 sleeps with nothing posted; a thread of its own rings its waker after hold_s.
// Rank 0 waits for rank 1's last message, so no closing connection wakes the sleeper.
int self_ring_rank(const std::string& driver, int rank, drivers::endpoint& ep) {
    const auto& f = ep.fast();
    completion c[1];
    int done = 0;
    if (rank == 0) {
        RANK_CHECK(rank, f.post_recv(f.ctx, 1, 9, 0, &done, sizeof done, 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 60) == 1, "recv completion");
        return 0;
    }
    drivers::waker w = ep.idle_waker();
    RANK_CHECK(rank, w.ring != nullptr, "%s offers no ring", driver.c_str());
    for (int round = 0; round < 3; ++round) {
        double rung        = 0;
        uint64_t token     = w.arm(w.ctx);
        std::thread ringer = std::thread([&] {
            test::sleep_s(hold_s);
            rung = now_s();
            w.ring(w.ctx);
        });
        double slept       = now_s();
        w.sleep(w.ctx, token, sleep_timeout_ns);
        double woke = now_s();
        ringer.join();
        RANK_CHECK(rank, woke - slept >= hold_s * 0.9, "round %d: woken before the ring", round);
        RANK_CHECK(rank, woke - rung < late_s, "round %d: woken %.1f ms after the ring", round,
                   (woke - rung) * 1e3);
        std::printf("# %s self ring round %d: woken %.3f ms after the ring\n", driver.c_str(),
                    round, (woke - rung) * 1e3);
    }
    RANK_CHECK(rank, f.post_send(f.ctx, 0, 9, 0, &done, sizeof done, 2) == 0, "send");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "send completion");
    return 0;
}

// Runs `body` on two ranks, each with its endpoint of `driver` connected.
void run(const char* driver, int (*body)(const std::string&, int, drivers::endpoint&)) {
    std::string d = driver;
    EXPECT_PASSED(test::run_job("wake", 2, 60, [&](int rank, auto& job, auto& dir) {
        file_store store(dir);
        auto ep = open_driver(d, rank, job, &store);
        RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
        return body(d, rank, **ep);
    }));
}

void shm_eager_send_wakes_the_sleeper(void**) {
    run("shm", eager_rank);
}
void shm_ack_wakes_the_sleeping_sender(void**) {
    run("shm", rendezvous_rank);
}
void shm_ring_wakes_the_own_sleeper(void**) {
    run("shm", self_ring_rank);
}
void tcp_ring_wakes_the_own_sleeper(void**) {
    run("tcp", self_ring_rank);
}
void tcp_eager_send_wakes_the_sleeper(void**) {
    run("tcp", eager_rank);
}
void tcp_clear_to_send_wakes_the_sleeping_sender(void**) {
    run("tcp", rendezvous_rank);
}

}  // namespace

LOOM_TEST_MAIN("drivers_wake", cmocka_unit_test(shm_eager_send_wakes_the_sleeper),
               cmocka_unit_test(shm_ack_wakes_the_sleeping_sender),
               cmocka_unit_test(shm_ring_wakes_the_own_sleeper),
               cmocka_unit_test(tcp_ring_wakes_the_own_sleeper),
               cmocka_unit_test(tcp_eager_send_wakes_the_sleeper),
               cmocka_unit_test(tcp_clear_to_send_wakes_the_sleeping_sender))
