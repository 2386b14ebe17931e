// SPDX-License-Identifier: Apache-2.0
// Clocks and deadlines. Every wait in loom is bounded by a deadline
// (docs/architecture.md#conventions).
#pragma once

#include <chrono>

namespace loom {

/// Monotonic seconds since an arbitrary epoch.
inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

class deadline {
  public:
    explicit deadline(double timeout_s) : end_s_(now_s() + timeout_s) {}
    bool expired() const { return now_s() >= end_s_; }
    double remaining_s() const { return end_s_ - now_s(); }

  private:
    double end_s_;
};

}  // namespace loom
