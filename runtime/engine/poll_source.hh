// SPDX-License-Identifier: Apache-2.0
// What the engine polls: a list of sources of completions, each one indirect call per
// pass. A driver endpoint is one (its fast path's poll); the in-network offload is another;
// later DPDK ports and GPU streams join the same list. A source may say how an idle caller
// sleeps until it has work (drivers/waker.hh); the engine sleeps only when every source
// that has work pending can be slept on through one waker, and naps otherwise.
#pragma once

#include "drivers/driver.hh"
#include "engine/offload.hh"

namespace loom::engine {

struct poll_source {
    void* ctx = nullptr;
    /// Makes progress; writes up to `max` completions (carrying the engine's cookies).
    int (*poll)(void* ctx, drivers::completion* out, int max) = nullptr;
    /// True while something posted to the source has not completed.
    bool (*pending)(void* ctx) = nullptr;
    /// How to sleep until the source has work; null: it cannot be slept on.
    drivers::waker wake;
};

/// A driver endpoint (connected): its fast path and its waker.
poll_source source_of(drivers::endpoint& endpoint);
/// An in-network offload; its completions come out as driver completions (peer -1).
poll_source source_of(offload& in_network);

/// The waker an idle caller may sleep on: the one all pending sources share (with none
/// pending, any source's); null when a pending source has none or two differ (then the
/// caller naps).
drivers::waker common_waker(const poll_source* sources, int n);

}  // namespace loom::engine
