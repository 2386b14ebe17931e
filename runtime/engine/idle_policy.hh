// Spin, then yield, then sleep (DESIGN.md "Poll mode, done right"): a waiting rank polls
// hot for a few passes, then gives its core away with sched_yield for up to 2 ms (the next
// message of a collective is usually that close), then sleeps in short naps, so 8 ranks
// on 2 cores all make progress. Any progress resets it to spinning.
#pragma once

#include <cstdint>

namespace loom::engine {

class idle_policy {
  public:
    /// Call after each poll pass: `busy` if it did anything.
    void after_poll(bool busy);
    void reset() { idle_passes_ = 0; }

  private:
    uint32_t idle_passes_   = 0;
    int64_t yield_since_ns_ = 0;
};

}  // namespace loom::engine
