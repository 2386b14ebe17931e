// SPDX-License-Identifier: Apache-2.0
// Spin, then yield, then sleep (docs/architecture.md#poll-mode): a waiting rank polls
// hot for a few passes, then gives its core away with sched_yield for a while (the next
// message of a collective is usually that close), then sleeps until a peer's send wakes it
// (drivers/waker.hh) or, where nothing can wake it, in short naps, so 8 ranks on 2 cores
// all make progress. Any progress resets it to spinning.
#pragma once

#include <cstdint>

namespace loom::engine {

class idle_policy {
  public:
    /// Call after each poll pass: `busy` if it did anything. Spins or yields and returns
    /// false, or returns true when the wait has lasted long enough to sleep: the caller
    /// then sleeps on an event, or calls nap().
    bool after_poll(bool busy);
    /// For callers that have no event to sleep on: a short nap every 16th pass, a yield on
    /// the others.
    void nap();
    void reset() {
        idle_passes_ = 0;
        waited_out_  = false;
    }

  private:
    uint32_t idle_passes_   = 0;
    bool waited_out_        = false;
    int64_t yield_since_ns_ = 0;
};

/// The longest sleep on an event: deadlines and a driver's liveness checks run between
/// sleeps, and whatever no peer signals (a ring slot freed for a queued send) waits at
/// most this long.
constexpr int64_t max_sleep_ns = 1'000'000;

}  // namespace loom::engine
