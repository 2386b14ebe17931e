// SPDX-License-Identifier: Apache-2.0
// How an idle caller sleeps until a peer may have given it work (docs/architecture.md#poll-mode):
// an optional part of the driver interface. A driver that offers it lets a rank with nothing to do
// leave the run queue instead of napping, and a peer's send wakes it within microseconds; a driver
// that does not leaves every entry null and callers nap.
//
// The protocol has no lost wake-up as long as the caller keeps this order:
//   1. token = arm(ctx)              announce "about to sleep": from here on, a peer that
//                                    publishes to this endpoint also signals it;
//   2. one more full poll pass       anything published before the announcement is seen;
//   3. sleep(ctx, token, timeout)    found nothing: waits unless a signal came after arm();
//                                    found work: sleep(ctx, token, 0) only ends the
//                                    announcement.
// A sleep is always bounded: deadlines and liveness checks run between sleeps, and a
// driver shortens it where progress needs its own polling (a send queued for ring space).
//
// Work handed over inside the owner's process (a caller posting while a progress thread
// sleeps) is published the same way: the poster publishes, then calls ring(ctx); a ring
// after step 1 ends the sleep of step 3 at once, and work published before step 1 is
// found by step 2. Posting and arming under one lock keeps that order.
#pragma once

#include <cstdint>

namespace loom::drivers {

struct waker {
    void* ctx = nullptr;
    /// Announces a sleep; returns the token that sleep() compares against. Called where the
    /// endpoint may be used (the thread that progresses it, holding what guards it).
    uint64_t (*arm)(void* ctx) = nullptr;
    /// Waits up to `timeout_ns` (0: not at all) unless signalled since arm(), then ends the
    /// announcement. Returns early on a signal, a timeout or a spurious wake alike. Touches
    /// no state that posting changes: it may run while another thread posts.
    void (*sleep)(void* ctx, uint64_t token, int64_t timeout_ns) = nullptr;
    /// Ends a sleep armed on this waker, from any thread of the owner's process; a ring
    /// while nobody sleeps is harmless. A system call at most: for hand-overs, not per step.
    void (*ring)(void* ctx) = nullptr;

    explicit operator bool() const { return arm != nullptr && sleep != nullptr; }
    /// ring(ctx) where the waker has one: for wrappers that hand a ring on to the waker
    /// they sleep on.
    void ring_if_any() const {
        if (ring != nullptr) {
            ring(ctx);
        }
    }
    bool same_as(const waker& o) const { return ctx == o.ctx && arm == o.arm && sleep == o.sleep; }
};

/// The waker of an endpoint class E with public members `uint64_t arm_sleep()` and
/// `void sleep(uint64_t token, int64_t timeout_ns)`, and `void ring()` where a hand-over
/// can end its sleep (without one, ring stays null and a progress thread naps instead).
template <typename E>
waker waker_of(E* e) {
    waker w{
        e,
        [](void* c) { return static_cast<E*>(c)->arm_sleep(); },
        [](void* c, uint64_t token, int64_t timeout_ns) {
            static_cast<E*>(c)->sleep(token, timeout_ns);
        },
    };
    if constexpr (requires { e->ring(); }) {
        w.ring = [](void* c) { static_cast<E*>(c)->ring(); };
    }
    return w;
}

/// The waker of a wrapper E that sleeps on `inner` (its ring() hands on to inner's): it
/// can be rung exactly when `inner` can.
template <typename E>
waker wrapper_waker_of(E* e, const waker& inner) {
    waker w = waker_of(e);
    if (inner.ring == nullptr) {
        w.ring = nullptr;
    }
    return w;
}

}  // namespace loom::drivers
