// Element-wise reduction kernels: dst[i] = a[i] op b[i] for every dtype × op of loom.h.
// Vectorised (the loops are written so GCC auto-vectorises them at -O2 with the target's
// SIMD; float16/bfloat16 are widened to float32, reduced, and rounded back to nearest-even).
// avg reduces as sum; the engine divides once at the end (finish_average).
#pragma once

#include <cstddef>

#include <loom/loom.h>

namespace loom::engine {

using reduce_fn = void (*)(void* dst, const void* a, const void* b, size_t count);

/// The kernel for (dtype, op), or nullptr for an invalid pair. Resolved once per call, off
/// the per-step hot path.
reduce_fn reduce_kernel(loom_dtype_t dtype, loom_op_t op);

/// For LOOM_AVG: divides every element of `buf` by `n` (integers: truncating division).
void finish_average(void* buf, loom_dtype_t dtype, size_t count, int n);

/// float32 <-> float16 / bfloat16 conversions (round to nearest even), for tests and kernels.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace loom::engine
