// SPDX-License-Identifier: Apache-2.0
// The timer wheel's set-up and arming (reliable_wheel.hh); advance() is inline in the header.
#include "drivers/reliable/reliable_wheel.hh"

#include <bit>

namespace loom::drivers::reliable {

void timer_wheel::init(size_t buckets, double tick_s, double now_s) {
    size_t n = std::bit_ceil(buckets < 2 ? size_t{2} : buckets);
    wheel_   = std::vector<intrusive_list<timer_node>>(n);
    mask_    = n - 1;
    current_ = 0;
    start_s_ = now_s;
    tick_s_  = tick_s > 0 ? tick_s : 1e-3;
    armed_   = 0;
}

void timer_wheel::arm(timer_node* n, double at_s) {
    disarm(n);
    // Round up: a timer never fires before its time.
    double ticks = (at_s - start_s_) / tick_s_;
    uint64_t due = ticks <= 0 ? 0 : uint64_t(ticks);
    if (double(due) < ticks) {
        ++due;
    }
    if (due <= current_) {
        due = current_ + 1;
    }
    n->due   = due;
    n->armed = true;
    wheel_[due & mask_].push_back(n);
    ++armed_;
}

}  // namespace loom::drivers::reliable
