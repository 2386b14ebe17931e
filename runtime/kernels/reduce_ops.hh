// SPDX-License-Identifier: Apache-2.0
// Shared by the reduction kernels (reduce.cc: native types; reduce_half.cc: float16 and
// bfloat16): the element operators, the block size, the x86 multiversioning switch, and the
// entry points of the 16-bit kernels. Internal to runtime/kernels.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/reduce.hh"

// On x86-64 Linux each kernel is built twice, for the baseline ISA and for AVX2
// (target_clones; the ifunc resolver picks one at load time), and float16 has an F16C kernel
// chosen in sixteen_kernel(). LOOM_REDUCE_BASELINE_ONLY builds the baseline alone: the tests
// are built that way too, so the code a CPU without AVX2 runs is checked on a machine that
// has it.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && \
    !defined(LOOM_REDUCE_BASELINE_ONLY)
#define LOOM_REDUCE_X86 1
#define LOOM_REDUCE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOOM_REDUCE_X86 0
#define LOOM_REDUCE_CLONES
#endif

namespace loom::kernels::detail {

// Bytes per block of the native kernels: 16 SSE or 8 AVX2 vectors, enough to amortise the
// loop overhead, small enough that the scalar tail (< one block) stays short.
constexpr size_t block_bytes = 256;

// Integers compute in the unsigned type so that overflow wraps without undefined behaviour.
template <class T, bool = std::is_integral_v<T>>
struct arith {
    using type = T;
};
template <class T>
struct arith<T, true> {
    using type = std::make_unsigned_t<T>;
};
template <class T>
using arith_t = typename arith<T>::type;

template <class F>
using bits_t = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;

template <class F>
constexpr bits_t<F> quiet_bit = bits_t<F>(1) << (std::numeric_limits<F>::digits - 2);

// IEEE 754-2019 minimum/maximum, commutative bit for bit: when neither operand is strictly
// smaller (equal, or unordered because of a NaN) the result is made from both operands' bits:
// OR for min of equals (-0 wins), AND for max of equals (+0 wins), OR plus the quiet bit for
// a NaN. All selects, so the loop if-converts and vectorises.
template <class F, bool is_min>
[[gnu::always_inline]] inline F float_min_max(F a, F b) {
    using U           = bits_t<F>;
    const U ua        = std::bit_cast<U>(a);
    const U ub        = std::bit_cast<U>(b);
    const U tied      = a == b ? (is_min ? (ua | ub) : (ua & ub)) : (ua | ub | quiet_bit<F>);
    const bool a_wins = is_min ? a < b : a > b;
    const bool b_wins = is_min ? b < a : b > a;
    return a_wins ? a : (b_wins ? b : std::bit_cast<F>(tied));
}

struct op_sum {
    template <class T>
    static T apply(T a, T b) {
        using A = arith_t<T>;
        return static_cast<T>(static_cast<A>(a) + static_cast<A>(b));
    }
};

struct op_prod {
    template <class T>
    static T apply(T a, T b) {
        using A = arith_t<T>;
        return static_cast<T>(static_cast<A>(a) * static_cast<A>(b));
    }
};

template <bool is_min>
struct op_min_max {
    template <class T>
    static T apply(T a, T b) {
        if constexpr (std::is_floating_point_v<T>) {
            return float_min_max<T, is_min>(a, b);
        } else {
            return (is_min ? a < b : a > b) ? a : b;
        }
    }
};
using op_min = op_min_max<true>;
using op_max = op_min_max<false>;

/// The kernel of `K<T, op>` for each op (avg reduces as sum), nullptr for an unknown op.
template <class T, template <class, class> class K>
reduce_fn pick(loom_op_t op) {
    switch (op) {
        case LOOM_SUM:
        case LOOM_AVG:  // avg reduces as sum; finish_average divides once at the end
            return K<T, op_sum>::run;
        case LOOM_PROD:
            return K<T, op_prod>::run;
        case LOOM_MIN:
            return K<T, op_min>::run;
        case LOOM_MAX:
            return K<T, op_max>::run;
        default:
            return nullptr;
    }
}

/// float16 / bfloat16 kernels and average (reduce_half.cc); nullptr / no-op for other dtypes.
reduce_fn sixteen_kernel(loom_dtype_t dtype, loom_op_t op);
void sixteen_average(void* buf, loom_dtype_t dtype, size_t count, int n);

}  // namespace loom::kernels::detail
