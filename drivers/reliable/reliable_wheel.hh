// SPDX-License-Identifier: Apache-2.0
// One hashed timer wheel per endpoint: every frame in flight toward every peer has its
// retransmission timer here. Arming, re-arming and disarming are O(1) list moves on a node
// the frame's slot embeds (no allocation), and a poll pass visits only the buckets of the
// ticks that passed, not every frame in flight: per-packet timers were the main cost of
// reliable transports under loss in published measurements (SwitchML), a wheel keeps the
// cost per pass flat.
//
// Shape: `buckets` lists (a power of two) of `tick_s` each; a timer due at tick t sits in
// bucket t & mask with its absolute tick, so a timer further away than one turn stays in its
// bucket until its turn comes (checked by the tick, never fired early).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/intrusive_list.hh"

namespace loom::drivers::reliable {

struct timer_node {
    timer_node* next = nullptr;
    timer_node* prev = nullptr;
    uint64_t due     = 0;  // absolute tick
    bool armed       = false;
};

class timer_wheel {
  public:
    /// `buckets` rounded up to a power of two; ticks count from `now_s`.
    void init(size_t buckets, double tick_s, double now_s);

    /// (Re)arms `n` to fire at the first tick at or after `at_s` (at the next tick when that
    /// has passed).
    void arm(timer_node* n, double at_s);
    void disarm(timer_node* n) {
        if (n->armed) {
            wheel_[n->due & mask_].remove(n);
            n->armed = false;
            --armed_;
        }
    }

    /// Fires, through fire(node*), every timer due at or before `now_s`, disarmed before the
    /// call (fire may re-arm it). Visits at most one turn of buckets however long it was.
    template <class F>
    int advance(double now_s, F&& fire) {
        uint64_t target = tick_of(now_s);
        if (target <= current_) {
            return 0;
        }
        uint64_t steps = target - current_;
        if (steps > wheel_.size()) {
            steps = wheel_.size();
        }
        int fired = 0;
        for (uint64_t i = 1; i <= steps; ++i) {
            auto& bucket = wheel_[(current_ + i) & mask_];
            // Only the nodes present now: one fire() may re-arm into this very bucket.
            size_t n = bucket.size();
            for (timer_node* x = bucket.front(); n > 0 && x != nullptr; --n) {
                timer_node* next = x->next;
                if (x->due <= target) {
                    bucket.remove(x);
                    x->armed = false;
                    --armed_;
                    ++fired;
                    fire(x);
                }
                x = next;
            }
        }
        current_ = target;
        return fired;
    }

    size_t armed() const { return armed_; }
    uint64_t tick_of(double t_s) const {
        return t_s <= start_s_ ? 0 : uint64_t((t_s - start_s_) / tick_s_);
    }

  private:
    std::vector<intrusive_list<timer_node>> wheel_;
    uint64_t mask_    = 0;
    uint64_t current_ = 0;  // the last tick advanced to
    double start_s_   = 0;
    double tick_s_    = 1e-3;
    size_t armed_     = 0;
};

}  // namespace loom::drivers::reliable
