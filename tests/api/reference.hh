// SPDX-License-Identifier: Apache-2.0
// Inputs and independently computed references for the multi-process C API sweep.
//
// Every rank can generate every rank's input (a hash of seed, rank and element index), so
// each rank checks its own output against a reference computed here, with plain scalar
// code that shares nothing with the engine's kernels.
//
// Exactness: integers are bit-exact (sum and prod wrap in the element's width, as
// reduce.hh states; avg is the wrapped sum divided by N, truncating). Float prod, min and
// max use small integers, so every order of evaluation is exact and the result is compared
// exactly. Float sum and avg use fractions in [-1, 1): the result must lie within
//   N·u·Σ|x_i| + u·|reference|
// of the exact value (u = 2^-24 float32, 2^-53 float64, 2^-11 float16, 2^-8 bfloat16): each
// of the N-1 additions of any algorithm's order rounds once in the element type (float16 and
// bfloat16 accumulate in float32 and round back per step, which is within the same bound),
// and avg adds one rounding of the division.
#pragma once

#include <loom/loom.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::test::api {

/// Fills `n` elements of rank `rank`'s input for a reduction with `op`, elements
/// [first, first + n) of its vector.
void fill_reduction_input(loom_dtype_t dtype, loom_op_t op, uint64_t seed, int rank, void* buf,
                          size_t first, size_t n);

/// Checks `got` (elements [first, first + n) of the reduction over `nranks` ranks of
/// fill_reduction_input) against the reference; "" when it matches, else the first
/// mismatch with index, value and expected value.
std::string check_reduction(loom_dtype_t dtype, loom_op_t op, uint64_t seed, int nranks,
                            const void* got, size_t first, size_t n);

/// Stores element i of `buf` in `dtype`: `f` for the float dtypes (rounded to the dtype), the
/// low bytes of `v` for the integer ones.
void store_element(loom_dtype_t dtype, void* buf, size_t i, double f, int64_t v);

/// Random bytes for the data-movement primitives: `bytes` bytes of stream (seed, who).
void fill_bytes(uint64_t seed, uint64_t who, void* buf, size_t bytes);

/// The index of the first byte where a and b differ, or -1.
long first_difference(const void* a, const void* b, size_t bytes);

}  // namespace loom::test::api
