// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the algorithm families: integer logs, ring positions, the
// standard cost notes. Header-only, no state.
#pragma once

#include <cstdint>

#include "algorithm.hh"

namespace loom::algorithms {

// The schedule vocabulary every generator speaks.
using schedule::buffer_id;
using schedule::no_step;
using schedule::region;
using schedule::step_id;

inline int ceil_log2(int64_t n) {
    int k = 0;
    while ((int64_t{1} << k) < n) {
        ++k;
    }
    return k;
}
inline int floor_log2(int64_t n) {
    int k = 0;
    while ((int64_t{2} << k) <= n) {
        ++k;
    }
    return k;
}
inline bool is_pow2(int64_t n) {
    return n > 0 && (n & (n - 1)) == 0;
}
inline int mod(int64_t a, int64_t n) {
    return static_cast<int>(((a % n) + n) % n);
}

/// A constraint check that always passes (for algorithms that take any call).
inline status any_call(const call&) {
    return status::ok();
}

/// Segment s of P over `count` elements (same partition as blocks).
inline int64_t segment_offset(int64_t count, int segments, int s) {
    return schedule::block_offset(count, segments, s);
}
inline int64_t segment_size(int64_t count, int segments, int s) {
    return schedule::block_size(count, segments, s);
}

}  // namespace loom::algorithms
