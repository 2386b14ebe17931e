// SPDX-License-Identifier: Apache-2.0
// Reduction kernels for the native types (reduce.hh); float16/bfloat16 are in
// reduce_half.cc, the shared operators in reduce_ops.hh.
//
// How they vectorise: GCC 12 at -O2 uses the "very cheap" vectoriser cost model, which only
// vectorises a loop whose vector code replaces the scalar loop entirely: a trip count known to
// be a multiple of the vector width and no run-time alias checks. So every kernel walks its
// data in blocks of `block_bytes` with a constant inner trip count over __restrict operands,
// then finishes a tail of less than one block in scalar code. In-place calls (dst == a or
// dst == b) go to loops that take the aliased operand once, so no __restrict promise is ever
// false. On x86-64 each kernel also has an AVX2 clone (reduce_ops.hh); bench_reduce in
// tests/engine_reduce measures both.
#include <cstring>
#include <type_traits>

#include "kernels/reduce.hh"
#include "kernels/reduce_ops.hh"

namespace loom::kernels {
namespace {

using namespace detail;

// Runs element(i) for every i < n: whole blocks with a constant inner trip count (the
// loops that vectorise), then the tail in scalar code. Each element lambda is forced
// inline: called out of line it hides the __restrict operands and nothing vectorises.
template <class T, class F>
[[gnu::always_inline]] inline void blockwise(size_t n, F element) {
    constexpr size_t block = block_bytes / sizeof(T);
    size_t i               = 0;
    for (; i + block <= n; i += block) {
        for (size_t j = 0; j < block; ++j) {
            element(i + j);
        }
    }
    for (; i < n; ++i) {
        element(i);
    }
}

// d = a op b; d, a, b pairwise distinct (a may equal b: both are only read).
template <class T, class Op>
[[gnu::always_inline]] inline void loop_distinct(T* __restrict d, const T* __restrict a,
                                                 const T* __restrict b, size_t n) {
    blockwise<T>(
        n, [&](size_t i) __attribute__((always_inline)) { d[i] = Op::apply(a[i], b[i]); });
}

// In place: d = d op s (d_first) or d = s op d; keeps the caller's operand order.
template <class T, class Op, bool d_first>
[[gnu::always_inline]] inline void loop_into(T* __restrict d, const T* __restrict s, size_t n) {
    blockwise<T>(
        n, [&](size_t i) __attribute__((always_inline)) {
            d[i] = d_first ? Op::apply(d[i], s[i]) : Op::apply(s[i], d[i]);
        });
}

// d = d op d (dst == a == b).
template <class T, class Op>
[[gnu::always_inline]] inline void loop_self(T* d, size_t n) {
    blockwise<T>(
        n, [&](size_t i) __attribute__((always_inline)) { d[i] = Op::apply(d[i], d[i]); });
}

template <class T, class Op>
LOOM_REDUCE_CLONES void kernel(void* dst, const void* a, const void* b, size_t n) {
    T* d       = static_cast<T*>(dst);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    if (d == x && d == y) {
        loop_self<T, Op>(d, n);
    } else if (d == x) {
        loop_into<T, Op, true>(d, y, n);
    } else if (d == y) {
        loop_into<T, Op, false>(d, x, n);
    } else {
        loop_distinct<T, Op>(d, x, y, n);
    }
}

template <class T, class Op>
struct native {
    static constexpr reduce_fn run = &kernel<T, Op>;
};

// ---- average ------------------------------------------------------------------------------

// Floats: blocked like the kernels so the division vectorises (one correctly rounded
// division per element; a multiplication by 1/n would not be).
template <class T>
void divide_floats(T* __restrict p, size_t count, T by) {
    blockwise<T>(
        count, [&](size_t i) __attribute__((always_inline)) { p[i] = p[i] / by; });
}

template <class T>
void divide_all(void* buf, size_t count, int n) {
    T* p = static_cast<T*>(buf);
    if constexpr (std::is_floating_point_v<T>) {
        divide_floats<T>(p, count, static_cast<T>(n));
    } else {
        // Widen first: n may exceed T's range (int8 over 200 ranks), and the quotient of a
        // value by a positive n always fits T again. Integer division has no SIMD form.
        using W    = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        const W by = static_cast<W>(n);
        for (size_t i = 0; i < count; ++i) {
            p[i] = static_cast<T>(static_cast<W>(p[i]) / by);
        }
    }
}

// Calls f(T{}) with the C++ type of a native dtype; does nothing for the 16-bit floats
// (reduce_half.cc) and unknown dtypes.
template <class F>
void with_native_type(loom_dtype_t dtype, F f) {
    switch (dtype) {
        case LOOM_INT8:
            return f(int8_t{});
        case LOOM_UINT8:
            return f(uint8_t{});
        case LOOM_INT32:
            return f(int32_t{});
        case LOOM_UINT32:
            return f(uint32_t{});
        case LOOM_INT64:
            return f(int64_t{});
        case LOOM_UINT64:
            return f(uint64_t{});
        case LOOM_FLOAT32:
            return f(float{});
        case LOOM_FLOAT64:
            return f(double{});
        default:
            return;
    }
}

bool is_sixteen(loom_dtype_t dtype) {
    return dtype == LOOM_FLOAT16 || dtype == LOOM_BFLOAT16;
}

}  // namespace

reduce_fn reduce_kernel(loom_dtype_t dtype, loom_op_t op) {
    // An unknown op is refused here from its bytes: a value outside the enum's range must
    // not be loaded as a loom_op_t (the lambda below reads it through a reference).
    std::underlying_type_t<loom_op_t> op_bits;
    std::memcpy(&op_bits, &op, sizeof op_bits);
    if (static_cast<uint64_t>(op_bits) >= LOOM_OP_COUNT) {  // negative ones too
        return nullptr;
    }
    if (is_sixteen(dtype)) {
        return sixteen_kernel(dtype, op);
    }
    reduce_fn fn = nullptr;
    with_native_type(dtype, [&](auto t) { fn = pick<decltype(t), native>(op); });
    return fn;
}

void finish_average(void* buf, loom_dtype_t dtype, size_t count, int n) {
    if (n <= 1) {
        return;
    }
    if (is_sixteen(dtype)) {
        return sixteen_average(buf, dtype, count, n);
    }
    with_native_type(dtype, [&](auto t) { divide_all<decltype(t)>(buf, count, n); });
}

void copy_bytes(void* dst, const void* src, size_t n) {
    if (n != 0) {  // memcpy's pointers must be valid even for n == 0; callers may pass null
        std::memcpy(dst, src, n);
    }
}

}  // namespace loom::kernels
