// SPDX-License-Identifier: Apache-2.0
// The per-client token buckets (rate_limit.hh).
#include "rate_limit.hh"

#include <algorithm>

namespace loom::ctld {

bool rate_limiter::allow(const std::string& client) {
    if (rate_ <= 0) {
        return true;
    }
    using namespace std::chrono;
    auto now = steady_clock::now();
    std::lock_guard lock(mutex_);
    // A bucket refilled to the full burst is the same as none: dropped every few seconds.
    if (now - last_prune_ > seconds(5)) {
        std::erase_if(buckets_, [&](const auto& entry) {
            return duration<double>(now - entry.second.last).count() * rate_ >= rate_;
        });
        last_prune_ = now;
    }
    auto [it, fresh] = buckets_.try_emplace(client);
    bucket& b        = it->second;
    if (fresh) {
        b.tokens = rate_;
    } else {
        b.tokens = std::min(rate_, b.tokens + duration<double>(now - b.last).count() * rate_);
    }
    b.last = now;
    if (b.tokens < 1) {
        return false;
    }
    b.tokens -= 1;
    return true;
}

}  // namespace loom::ctld
