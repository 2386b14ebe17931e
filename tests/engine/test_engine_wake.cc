// SPDX-License-Identifier: Apache-2.0
// Thread mode hands a call over to a sleeping progress thread: start() rings the waker the
// thread sleeps on (drivers/waker.hh), so the call does not wait out the sleep.
//
// The engine runs over the self driver behind an endpoint whose waker counts why each sleep
// ended, and whose sleep lasts far longer than the engine asks (long_sleep): a call that
// completes in time was woken by the ring, and the counts say so.
#include <time.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <vector>

#include "base/clock.hh"
#include "engine/engine.hh"
#include "schedule/schedule.hh"
#include "test_main.hh"
#include "value_or_fail.hh"

using namespace loom;

namespace {

constexpr auto long_sleep   = std::chrono::seconds(5);  // what a missing ring would cost
constexpr double late_s     = 0.5;                      // completed later: not by the ring
constexpr int rounds        = 20;
constexpr int64_t count     = 256;
constexpr uint64_t no_token = ~uint64_t{0};

/// The self driver, with a waker that counts its sleeps by how they ended.
class counting_endpoint final : public drivers::endpoint {
  public:
    explicit counting_endpoint(std::unique_ptr<drivers::endpoint> inner)
        : inner_(std::move(inner)) {}
    drivers::caps capabilities() const override { return inner_->capabilities(); }
    status connect() override { return inner_->connect(); }
    const drivers::fast_path& fast() const override { return inner_->fast(); }
    void close() override { inner_->close(); }
    drivers::waker idle_waker() override { return drivers::waker_of(this); }

    uint64_t arm_sleep() {
        std::lock_guard<std::mutex> hold(lock_);
        return rings_;
    }
    void sleep(uint64_t token, int64_t timeout_ns) {
        std::unique_lock<std::mutex> hold(lock_);
        if (timeout_ns <= 0) {
            return;
        }
        sleeping_token_ = token;
        bool rung       = woke_.wait_for(hold, long_sleep, [&] { return rings_ != token; });
        sleeping_token_ = no_token;
        ++(rung ? ended_by_ring_ : ended_by_timeout_);
    }
    void ring() {
        std::lock_guard<std::mutex> hold(lock_);
        ++rings_;
        woke_.notify_all();
    }

    /// Waits (up to 5 s) until a sleep is under way that no ring has ended yet.
    bool wait_for_sleeper() {
        for (double until = now_s() + 5; now_s() < until;) {
            {
                std::lock_guard<std::mutex> hold(lock_);
                if (sleeping_token_ != no_token && sleeping_token_ == rings_) {
                    return true;
                }
            }
            timespec nap{0, 100'000};
            nanosleep(&nap, nullptr);
        }
        return false;
    }
    int ended_by_ring() {
        std::lock_guard<std::mutex> hold(lock_);
        return ended_by_ring_;
    }
    int ended_by_timeout() {
        std::lock_guard<std::mutex> hold(lock_);
        return ended_by_timeout_;
    }

  private:
    std::unique_ptr<drivers::endpoint> inner_;
    std::mutex lock_;
    std::condition_variable woke_;
    uint64_t rings_          = 0;
    uint64_t sleeping_token_ = no_token;
    int ended_by_ring_       = 0;
    int ended_by_timeout_    = 0;
};

/// Rank 0 of one sends `count` elements to itself through the driver: the call completes
/// only when somebody polls the driver.
std::shared_ptr<const engine::plan> send_to_self_plan() {
    schedule::schedule_info info;
    info.coll = schedule::collective::sendrecv, info.nranks = 1, info.count = count;
    info.algorithm = "send-to-self";
    schedule::rank_schedule rs;
    schedule::builder b(rs);
    b.send(0, schedule::region{0, count, schedule::buffer_id::input});
    b.recv(0, schedule::region{0, count, schedule::buffer_id::output});
    return loom::test::value_or_fail(engine::compile(info, rs, LOOM_INT32, 0x77));
}

void call_posted_to_a_sleeping_thread_rings_it(void**) {
    drivers::endpoint_config cfg;
    auto self = drivers::open("self", cfg);
    assert_true(self.is_ok());
    counting_endpoint ep(std::move(*self));
    assert_true(ep.connect().is_ok());
    engine::engine_config ec;
    ec.progress  = engine::progress_mode::thread;
    auto created = engine::engine::create(ec, ep);
    assert_true(created.is_ok());
    std::unique_ptr<engine::engine> eng = std::move(*created);
    auto plan                           = send_to_self_plan();
    std::vector<int32_t> in(count), out(count);
    double slowest = 0;
    for (int round = 0; round < rounds; ++round) {
        for (int64_t i = 0; i < count; ++i) {
            in[size_t(i)] = int32_t(i * 3 + round);
        }
        assert_true(ep.wait_for_sleeper());
        double t0 = now_s();
        auto r    = eng->start(plan, {in.data(), out.data(), LOOM_INT32, LOOM_SUM}, uint32_t(round),
                               false, 20);
        assert_true(r.is_ok());
        assert_int_equal(eng->wait(*r, -1), LOOM_SUCCESS);
        slowest = std::max(slowest, now_s() - t0);
        eng->release(*r);
        assert_true(out == in);
    }
    std::printf("# %d calls handed to a sleeping thread, the slowest in %.3f ms\n", rounds,
                slowest * 1e3);
    assert_int_equal(ep.ended_by_ring(), rounds);
    assert_int_equal(ep.ended_by_timeout(), 0);
    assert_true(slowest < late_s);
    eng.reset();  // the destructor rings the sleeping thread too: it stops at once
    assert_int_equal(ep.ended_by_timeout(), 0);
}

}  // namespace

LOOM_TEST_MAIN("engine_wake", cmocka_unit_test(call_posted_to_a_sleeping_thread_rings_it))
