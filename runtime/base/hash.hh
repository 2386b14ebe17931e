// SPDX-License-Identifier: Apache-2.0
// Hashing and pseudo-random streams, written once for all of loom.
//
// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014):
// add the golden-ratio increment, then a multiply-xorshift finaliser that sends every input
// bit to every output bit. As a finaliser it spreads tags over hash tables; as a stream it
// is a full-period generator from any seed, cheap enough for a decision per packet (fault
// injection, backoff jitter). Not for secrets: those use base/secret.hh.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom {

constexpr uint64_t golden_gamma = 0x9e3779b97f4a7c15ull;

/// The finaliser alone: a bijection of 64-bit words.
constexpr uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// One splitmix64 output for `x` (the increment, then the finaliser).
constexpr uint64_t splitmix64(uint64_t x) {
    return mix64(x + golden_gamma);
}

/// A splitmix64 stream: next() advances the state by the increment and finalises it.
class splitmix_stream {
  public:
    explicit constexpr splitmix_stream(uint64_t seed = 0) : state_(seed) {}
    constexpr uint64_t next() { return mix64(state_ += golden_gamma); }
    /// Uniform in [0, 1) from the top 53 bits, so p = 1 always fires and p = 0 never does.
    constexpr double uniform() { return double(next() >> 11) * 0x1p-53; }

  private:
    uint64_t state_;
};

/// FNV-1a, 64-bit: a stable name hash (job and communicator names on the wire).
constexpr uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) {
        h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    }
    return h;
}

}  // namespace loom
