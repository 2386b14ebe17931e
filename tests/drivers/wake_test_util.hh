// SPDX-License-Identifier: Apache-2.0
// What the waker tests share (drivers/waker.hh, with real processes): a rank sleeps on its
// endpoint (arm, one poll pass, sleep with a 5 s timeout) and must be woken by its peer's
// event within milliseconds, not at the timeout. The peer acts 200 ms after the sleeper
// started, so it surely sleeps.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "driver_test_util.hh"
#include "sleep.hh"

namespace loom::test::wake {

constexpr int64_t sleep_timeout_ns = 5'000'000'000;  // what a lost wake-up would cost
constexpr double late_s            = 0.1;            // woken later than this: not by the event
constexpr double hold_s            = 0.2;            // the peer acts after this

// Times are compared across processes: now_s() (base/clock.hh) is the steady clock,
// CLOCK_MONOTONIC, one clock for every process of the host.

/// Sleeps on the endpoint until one completion comes; counts the sleeps.
inline int sleep_until_completion(drivers::endpoint& ep, drivers::completion* c, int* sleeps) {
    const drivers::fast_path& f = ep.fast();
    drivers::waker w            = ep.idle_waker();
    double give_up              = now_s() + 20;
    while (now_s() < give_up) {
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

/// Three rounds on connected endpoint `ep` of `driver`: rank 1 sleeps on a receive; rank 0
/// sends after hold_s, the send time in the payload, and waits for its send polling, or
/// with `sender_sleeps` sleeping too. 0 when every sleeper woke within late_s.
inline int eager_rounds(drivers::endpoint& ep, const std::string& driver, int rank,
                        bool sender_sleeps = false) {
    RANK_CHECK(rank, bool(ep.idle_waker()), "%s offers no waker", driver.c_str());
    const auto& f = ep.fast();
    drivers::completion c[1];
    for (int round = 0; round < 3; ++round) {
        double sent = 0;
        int sleeps  = 0;
        if (rank == 0) {
            sleep_s(hold_s);
            sent = now_s();
            RANK_CHECK(rank, f.post_send(f.ctx, 1, 7 + round, 0, &sent, sizeof sent, 1) == 0,
                       "send");
            if (!sender_sleeps) {
                RANK_CHECK(rank, wait_completions(f, c, 1, 20) == 1, "send completion");
                continue;
            }
        } else {
            RANK_CHECK(rank, f.post_recv(f.ctx, 0, 7 + round, 0, &sent, sizeof sent, 2) == 0,
                       "recv");
        }
        RANK_CHECK(rank, sleep_until_completion(ep, c, &sleeps) == 1, "no completion");
        double woke = now_s();
        RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].cookie == uint64_t(1 + rank),
                   "status %d", int(c[0].status));
        RANK_CHECK(rank, rank == 0 || sleeps >= 1, "the receiver never slept");
        RANK_CHECK(rank, woke - sent < late_s, "round %d: woken %.1f ms after the send", round,
                   (woke - sent) * 1e3);
        std::printf("# %s %s round %d: woken %.3f ms after the send (%d sleeps)\n", driver.c_str(),
                    rank == 0 ? "sender" : "receiver", round, (woke - sent) * 1e3, sleeps);
    }
    return 0;
}

}  // namespace loom::test::wake
