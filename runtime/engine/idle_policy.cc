// SPDX-License-Identifier: Apache-2.0
#include "engine/idle_policy.hh"

#include <sched.h>
#include <time.h>

namespace loom::engine {
namespace {

// A few passes of polling before yielding: with more ranks than cores the peer we wait for
// is often waiting for our core, so spinning longer only delays it; with a core each, a
// yield that finds nobody else to run returns at once, so little is lost either way.
constexpr uint32_t spin_passes = 4;
// Then yield for up to this long: a collective's next message is usually microseconds away,
// and a yielding rank gives its core straight to the rank that will send it (measured: 4
// ranks on 2 cores, 512 B all-reduce 34 µs with 256 yields before napping, 9 µs with this).
// Sleeping on an event sooner (after 20 or 100 µs of yields) was no faster for 8 B..4 KiB
// all-reduces at 4 and 8 ranks on 2 cores: a yield hands the core over sooner than a futex
// wakes a sleeper, so the sleep serves the long waits.
constexpr int64_t yield_window_ns = 2'000'000;
// Then sleep until woken (drivers/waker.hh), or where nothing can wake the caller, nap
// (timer slack adds about as much again): the wait is long, the core is better used by
// others.
constexpr long nap_ns = 50 * 1000;

int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

bool idle_policy::after_poll(bool busy) {
    if (busy) {
        idle_passes_ = 0;
        waited_out_  = false;
        return false;
    }
    ++idle_passes_;
    if (waited_out_) {
        return true;
    }
    if (idle_passes_ <= spin_passes) {
        return false;
    }
    if (idle_passes_ == spin_passes + 1) {
        yield_since_ns_ = now_ns();
    }
    // The clock is read every 16 yields: cheap next to a yield, fine-grained enough.
    if ((idle_passes_ & 15) != 0 || now_ns() - yield_since_ns_ < yield_window_ns) {
        sched_yield();
        return false;
    }
    waited_out_ = true;
    return true;
}

// One nap in 16 passes, yields between them: a rank that cannot be woken still answers
// within a few yields when its peer has the core.
void idle_policy::nap() {
    if ((idle_passes_ & 15) != 0) {
        sched_yield();
        return;
    }
    timespec nap{0, nap_ns};
    nanosleep(&nap, nullptr);
}

}  // namespace loom::engine
