// The fault injector's decisions, one place for both kinds of endpoint (fault.hh): a
// splitmix64 stream (one seed gives one fault pattern, whatever the platform's <random>)
// compared with the configured probabilities. One draw per question, so the wrappers decide
// in the same order on every platform and a run is reproducible from its seed.
#pragma once

#include <cstdint>

#include "base/hash.hh"
#include "drivers/fault/fault.hh"

namespace loom::drivers::fault {

class dice {
  public:
    dice() = default;
    dice(const fault_config& c, uint64_t seed)
        : drop_(c.drop), dup_(c.dup), reorder_(c.reorder), rng_(seed) {}

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
