// SPDX-License-Identifier: Apache-2.0
// What the endpoints in front of another endpoint (fault:, fwd:) share: they own the inner
// endpoint, are named "<kind>:<inner>", and sleep on the inner endpoint's waker, since every
// message reaches them through the inner transport. Work a wrapper holds itself, which no
// inner event announces, caps the sleep: its arm_sleep() sets sleep_cap_ns_, then returns
// arm_inner(). The wrapper sets fast_ (fast_path_of) in its constructor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "drivers/driver.hh"

namespace loom::drivers::common {

/// W: the wrapper, with the members fast_path_of and waker_of call.
template <class W>
class wrapper_endpoint : public endpoint {
  public:
    const fast_path& fast() const override { return fast_; }
    void close() override { inner_->close(); }
    endpoint& inner() { return *inner_; }

    waker idle_waker() override {
        inner_waker_ = inner_->idle_waker();
        return inner_waker_ ? wrapper_waker_of(static_cast<W*>(this), inner_waker_) : waker{};
    }
    void sleep(uint64_t token, int64_t timeout_ns) {
        inner_waker_.sleep(inner_waker_.ctx, token, std::min(timeout_ns, sleep_cap_ns_));
    }
    void ring() { inner_waker_.ring_if_any(); }

  protected:
    wrapper_endpoint(std::unique_ptr<endpoint> inner, std::string_view kind)
        : inner_(std::move(inner)), name_(std::string(kind) + inner_->capabilities().name) {}
    uint64_t arm_inner() { return inner_waker_.arm(inner_waker_.ctx); }

    std::unique_ptr<endpoint> inner_;
    std::string name_;
    fast_path fast_{};
    waker inner_waker_;
    int64_t sleep_cap_ns_ = 0;
};

}  // namespace loom::drivers::common
