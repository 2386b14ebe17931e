// SPDX-License-Identifier: Apache-2.0
// The fault injector's decisions, one place for every injector: both kinds of endpoint of
// the fault: wrapper (drivers/fault/fault.hh) and the aggregation node's loss injection
// (loom-switch --drop/--dup). A splitmix64 stream (one seed gives one fault pattern,
// whatever the platform's <random>) compared with the configured probabilities. One draw
// per question, so the injectors decide in the same order on every platform and a run is
// reproducible from its seed. The stream is the dice's own: nothing else (nonces) draws
// from it, so a pattern neither shifts with nor reveals anything else.
#pragma once

#include <cstdint>

#include "base/hash.hh"

namespace loom::drivers::fault {

class dice {
  public:
    dice() = default;
    dice(double drop, double dup, double reorder, uint64_t seed)
        : drop_(drop), dup_(dup), reorder_(reorder), rng_(seed) {}

    bool drop() { return rng_.uniform() < drop_; }
    bool duplicate() { return rng_.uniform() < dup_; }
    bool reorder() { return rng_.uniform() < reorder_; }

  private:
    double drop_ = 0, dup_ = 0, reorder_ = 0;
    splitmix_stream rng_;
};

/// The stream seed of `rank` under one run's seed: ranks draw different streams.
constexpr uint64_t rank_seed(uint64_t seed, int rank) {
    return seed ^ (uint64_t(uint32_t(rank)) + 1) * golden_gamma;
}

}  // namespace loom::drivers::fault
