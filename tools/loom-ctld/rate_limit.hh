// SPDX-License-Identifier: Apache-2.0
// The per-client request rate: a token bucket per client address (`rate` requests a
// second, bursts of up to `rate`), so one client cannot starve the others. Buckets of
// clients gone quiet are dropped, so the table stays as small as the set of active clients.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace loom::ctld {

class rate_limiter {
  public:
    /// rate: requests per second per client; 0: no limit.
    explicit rate_limiter(double rate) : rate_(rate) {}

    /// True when `client` may make one more request now (and counts it).
    bool allow(const std::string& client);

  private:
    struct bucket {
        double tokens = 0;
        std::chrono::steady_clock::time_point last{};
    };
    const double rate_;
    std::mutex mutex_;
    std::unordered_map<std::string, bucket> buckets_;
    std::chrono::steady_clock::time_point last_prune_{};
};

}  // namespace loom::ctld
