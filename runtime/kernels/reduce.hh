// SPDX-License-Identifier: Apache-2.0
// Element-wise reduction kernels: dst[i] = a[i] op b[i] for every dtype × op of loom.h.
// Vectorised (the loops are written so GCC auto-vectorises them at -O2 with the target's
// SIMD, plus an AVX2 clone on x86-64; float16/bfloat16 are widened to float32, reduced, and
// rounded back to nearest-even, float16 with F16C instructions where the CPU has them).
// avg reduces as sum; the engine divides once at the end (finish_average).
//
// Semantics, per element:
// - Integers wrap on overflow (two's complement; the arithmetic is done in the unsigned type).
// - float sum/prod: one IEEE operation in the element's type (float16/bfloat16: in float32,
//   then rounded once to nearest-even), so results are exact to the last bit against any
//   scalar reference that does the same.
// - float min/max follow IEEE 754-2019 minimum/maximum: a NaN operand gives a quiet NaN
//   (never silently dropped, unlike fmin/fmax), and min(-0, +0) = -0, max(-0, +0) = +0.
//   They are commutative bit for bit (NaN results OR the operands' bits), so ranks that
//   combine the same values in different orders hold identical bytes.
//
// Aliasing: dst may equal a, b or both (in place); any other overlap is not allowed.
#pragma once

#include <cstddef>
#include <cstdint>

#include <loom/loom.h>

namespace loom::kernels {

using reduce_fn = void (*)(void* dst, const void* a, const void* b, size_t count);

/// The kernel for (dtype, op), or nullptr for an invalid pair. Resolved once per call, off
/// the per-step hot path. `count` is in elements; count 0 touches nothing.
reduce_fn reduce_kernel(loom_dtype_t dtype, loom_op_t op);

/// For LOOM_AVG: divides every element of `buf` by `n` (integers: truncating division,
/// toward zero; floats: one correctly rounded division; float16/bfloat16: in float32, then
/// rounded). Precondition n >= 1; n <= 1 leaves `buf` as it is, as does an unknown dtype.
void finish_average(void* buf, loom_dtype_t dtype, size_t count, int n);

/// Copies n bytes between non-overlapping buffers (memcpy; one place to tune it later).
void copy_bytes(void* dst, const void* src, size_t n);

/// float32 <-> float16 / bfloat16 conversions (round to nearest even), for tests and kernels.
/// Subnormals are converted exactly (no flush to zero); overflow rounds to infinity. NaNs stay
/// NaN with their sign and the top payload bits; the narrowing sets the quiet bit only where
/// the kept payload would otherwise be zero, so every 16-bit pattern survives a round trip.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace loom::kernels
