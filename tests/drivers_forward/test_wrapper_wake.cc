// The wrappers' wakers (drivers/waker.hh) with real processes: fault:shm and fwd:shm offer
// the waker of the endpoint they wrap, so a rank that sleeps on them (arm, one poll pass,
// sleep with a 5 s timeout) is woken by its peer's send within milliseconds, not at the
// timeout. The peer sends 200 ms after the sleeper posted its receive, so it surely sleeps.
// A fault wrapper that holds a delayed message keeps its sleep short (it must post it).
#include <time.h>

#include <cstdio>
#include <string>

#include "base/params.hh"
#include "driver_test_util.hh"
#include "drivers/driver.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

constexpr int64_t sleep_timeout_ns = 5'000'000'000;  // what a lost wake-up would cost
constexpr double late_s            = 0.1;            // woken later than this: not by the event
constexpr double hold_s            = 0.2;            // the peer sends after this

double now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);  // one clock for every process of the host
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

void pause_s(double s) {
    timespec ts{time_t(s), long((s - double(time_t(s))) * 1e9)};
    ::nanosleep(&ts, nullptr);
}

result<std::unique_ptr<drivers::endpoint>> open_driver(const std::string& driver, int rank,
                                                       const std::string& job, kv_store* store) {
    drivers::endpoint_config cfg;
    cfg.rank      = rank;
    cfg.size      = 2;
    cfg.job       = job;
    cfg.store     = store;
    cfg.timeout_s = 30;
    cfg.fabric    = "ring:2";
    auto ep       = drivers::open(driver, cfg);
    if (!ep) {
        return ep.error();
    }
    if (status st = (*ep)->connect(); !st.is_ok()) {
        return st;
    }
    return ep;
}

/// Sleeps on the endpoint until one completion comes; counts the sleeps.
int sleep_until_completion(drivers::endpoint& ep, completion* c, int* sleeps) {
    const drivers::fast_path& f = ep.fast();
    drivers::waker w            = ep.idle_waker();
    double give_up              = now() + 20;
    while (now() < give_up) {
        uint64_t token = w.arm(w.ctx);
        int n          = f.poll(f.ctx, c, 1);
        w.sleep(w.ctx, token, n > 0 ? 0 : sleep_timeout_ns);
        if (n > 0) {
            return n;
        }
        ++*sleeps;
    }
    return 0;
}

// Rank 1 sleeps on a receive; rank 0 sends after hold_s, the send time in the payload. Both
// keep polling until the other is done (fwd: a rank forwards only while polled). With
// `sender_sleeps`, rank 0 also sleeps until its send completes.
int wake_rank(const std::string& driver, bool sender_sleeps, int rank, const std::string& job,
              const std::string& dir) {
    file_store store(dir);
    auto ep = open_driver(driver, rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    RANK_CHECK(rank, bool((*ep)->idle_waker()), "%s offers no waker", driver.c_str());
    const auto& f = (*ep)->fast();
    completion c[1];
    for (int round = 0; round < 3; ++round) {
        double sent = 0;
        if (rank == 0) {
            pause_s(hold_s);
            sent = now();
            RANK_CHECK(rank, f.post_send(f.ctx, 1, 7 + round, 0, &sent, sizeof sent, 1) == 0,
                       "send");
            if (!sender_sleeps) {
                RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "send completion");
                continue;
            }
            int sleeps = 0;
            RANK_CHECK(rank, sleep_until_completion(**ep, c, &sleeps) == 1, "no send completion");
            RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].cookie == 1, "send status");
            RANK_CHECK(rank, now() - sent < late_s, "round %d: send done %.1f ms after posting",
                       round, (now() - sent) * 1e3);
            continue;
        }
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 7 + round, 0, &sent, sizeof sent, 2) == 0, "recv");
        int sleeps = 0;
        RANK_CHECK(rank, sleep_until_completion(**ep, c, &sleeps) == 1, "no completion");
        double woke = now();
        RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].cookie == 2, "status %d",
                   int(c[0].status));
        RANK_CHECK(rank, sleeps >= 1, "the receiver never slept");
        RANK_CHECK(rank, woke - sent < late_s, "round %d: woken %.1f ms after the send", round,
                   (woke - sent) * 1e3);
        std::printf("# %s round %d: woken %.3f ms after the send (%d sleeps)\n", driver.c_str(),
                    round, (woke - sent) * 1e3, sleeps);
    }
    std::string done = "done" + std::to_string(rank);
    RANK_CHECK(rank, store.set(done, "1").is_ok(), "store");
    std::string other = "done" + std::to_string(1 - rank);
    deadline until(30);
    while (!store.get(other, 0).is_ok() && !until.expired()) {
        test::poll_for(f, 0.002, [](const completion&) {});
    }
    return 0;
}

void run(const char* driver, bool sender_sleeps = false) {
    test::store_dir dir("wrapwake");
    std::string job      = test::unique_job("wrapwake");
    std::string d        = driver;
    std::string problems = test::run_ranks(
        2, 60, [&](int rank) { return wake_rank(d, sender_sleeps, rank, job, dir.path); });
    if (!problems.empty()) {
        LOOM_FAIL(problems);
    }
}

void fault_shm_send_wakes_the_sleeper(void**) {
    run("fault:shm");
}

void fwd_shm_send_wakes_the_sleeper(void**) {
    run("fwd:shm");
}

// A delayed message sits in the wrapper until poll() posts it when due: a sleeping sender
// must not sleep past that (nothing would ring it), so the waker shortens the sleep.
void fault_delay_shortens_the_sleep(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_FAULT_DELAY_US", "20000").is_ok());
    run("fault:shm", true);
    assert_true(reg.set("LOOM_FAULT_DELAY_US", "0").is_ok());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fault_shm_send_wakes_the_sleeper),
        cmocka_unit_test(fwd_shm_send_wakes_the_sleeper),
        cmocka_unit_test(fault_delay_shortens_the_sleep),
    };
    return LOOM_RUN_TESTS("drivers_wrapper_wake", tests);
}
