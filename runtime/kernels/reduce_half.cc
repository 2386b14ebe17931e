// SPDX-License-Identifier: Apache-2.0
// float16 / bfloat16 reduction kernels and conversions (reduce.hh).
//
// A kernel widens a chunk of both operands into float32 arrays on the stack, reduces those
// with the float operators of reduce_ops.hh, and narrows back with one rounding to nearest
// even. Each of those loops has a constant trip count, so each vectorises on its own; the
// conversions are branch-free integer code (plus one float add for half subnormals) so they
// if-convert. On x86 CPUs with F16C, float16 converts with vcvtph2ps / vcvtps2ph instead,
// chosen once in sixteen_kernel(); it gives the same bits (tests/engine_reduce checks both
// paths).
#include <algorithm>
#include <cstring>

#include "kernels/reduce.hh"
#include "kernels/reduce_ops.hh"

#if LOOM_REDUCE_X86
#include <immintrin.h>
#endif

namespace loom::kernels {
namespace {

using namespace detail;

// Elements per chunk: two float32 arrays of 1 KiB each stay in L1.
constexpr size_t chunk_elems = 256;

// Branch-free so that the conversion loops if-convert: every case is computed, then selected.
inline float widen_half(uint16_t h) {
    constexpr uint32_t exp_mask = 0x7c00u << 13;  // half exponent field, at float position
    const uint32_t em           = uint32_t(h & 0x7fffu) << 13;
    const uint32_t exp          = em & exp_mask;
    const uint32_t normal       = em + ((127u - 15u) << 23);  // rebias the exponent
    const uint32_t inf_nan      = em + ((255u - 31u) << 23);  // exponent 31 -> 255
    // Subnormal m * 2^-24: int -> float is exact for m < 2^10; then lower the exponent by 24.
    const uint32_t fm  = std::bit_cast<uint32_t>(static_cast<float>(int32_t(h & 0x3ffu)));
    const uint32_t sub = fm == 0 ? 0u : fm - (24u << 23);
    const uint32_t mag = exp == exp_mask ? inf_nan : (exp == 0 ? sub : normal);
    return std::bit_cast<float>(mag | (uint32_t(h & 0x8000u) << 16));
}

inline uint32_t select_u32(bool c, uint32_t x, uint32_t y) {
    const uint32_t m = 0u - uint32_t(c);  // masks rather than ?: so no float op is branched over
    return (x & m) | (y & ~m);
}

// quiet_nan: the caller guarantees every NaN is quiet (true after any arithmetic operation,
// and after min/max, which set the quiet bit), so the payload rule of reduce.hh reduces to
// keeping the top bits; saves a compare and a select per element in the kernels.
template <bool quiet_nan>
inline uint16_t narrow_half(float f) {
    const uint32_t u    = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a    = u & 0x7fffffffu;
    // NaN: keep the top 10 payload bits; set the quiet bit if none would be left (reduce.hh).
    const uint32_t nan_m = (a >> 13) & 0x3ffu;
    const uint32_t nan   = 0x7c00u | nan_m | (quiet_nan || nan_m == 0 ? 0x200u : 0u);
    // |f| < 2^-14 is a half subnormal: adding 0.5 (whose float ulp is 2^-24, the half
    // subnormal step) rounds to nearest even in the FPU; the low bits are then the result.
    constexpr uint32_t magic = 126u << 23;
    const float sum_f        = std::bit_cast<float>(a) + std::bit_cast<float>(magic);
    const uint32_t sub       = std::bit_cast<uint32_t>(sum_f) - magic;
    // Normal: rebias, add 0x0fff plus the kept lsb (round half to even), truncate. A carry
    // out of the mantissa bumps the exponent, up to infinity, as rounding should.
    const uint32_t odd  = (a >> 13) & 1u;
    const uint32_t norm = (a - ((127u - 15u) << 23) + 0xfffu + odd) >> 13;
    const uint32_t mag  = select_u32(
         a > 0x7f800000u, nan,
         select_u32(a >= ((127u + 16u) << 23), 0x7c00u, select_u32(a < (113u << 23), sub, norm)));
    return static_cast<uint16_t>(mag | sign);
}

inline float widen_bfloat16(uint16_t b) {
    return std::bit_cast<float>(uint32_t(b) << 16);
}

template <bool quiet_nan>
inline uint16_t narrow_bfloat16(float f) {
    const uint32_t u    = std::bit_cast<uint32_t>(f);
    const uint32_t kept = u >> 16;
    const uint32_t nan  = kept | (quiet_nan || (kept & 0x7fu) == 0 ? 0x40u : 0u);
    const uint32_t rne  = (u + 0x7fffu + (kept & 1u)) >> 16;  // carries into inf correctly
    return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rne);
}

struct half_codec {
    static float widen(uint16_t v) { return widen_half(v); }
    static uint16_t narrow(float f) { return narrow_half<true>(f); }  // after an operation
};

struct bfloat16_codec {
    static float widen(uint16_t v) { return widen_bfloat16(v); }
    static uint16_t narrow(float f) { return narrow_bfloat16<true>(f); }  // after an operation
};

// One full chunk: constant trip counts, so each of the four loops vectorises. No __restrict
// is needed: the loops read a and b or write d only against the local arrays, which nothing
// else can point to, and a and b are read in full before d is written, so d may alias them.
template <class Codec, class Op>
[[gnu::always_inline]] inline void reduce_chunk(uint16_t* d, const uint16_t* a, const uint16_t* b) {
    alignas(64) float fa[chunk_elems];
    alignas(64) float fb[chunk_elems];
    for (size_t j = 0; j < chunk_elems; ++j) {
        fa[j] = Codec::widen(a[j]);
    }
    for (size_t j = 0; j < chunk_elems; ++j) {
        fb[j] = Codec::widen(b[j]);
    }
    for (size_t j = 0; j < chunk_elems; ++j) {
        fa[j] = Op::apply(fa[j], fb[j]);
    }
    for (size_t j = 0; j < chunk_elems; ++j) {
        d[j] = Codec::narrow(fa[j]);
    }
}

// The whole kernel, instantiated below for bfloat16 (with an AVX2 clone) and for float16 on
// CPUs without F16C (baseline only: every CPU with AVX2 has F16C and takes the F16C kernel).
template <class Codec, class Op>
[[gnu::always_inline]] inline void run16(void* dst, const void* a, const void* b, size_t n) {
    auto* d       = static_cast<uint16_t*>(dst);
    const auto* x = static_cast<const uint16_t*>(a);
    const auto* y = static_cast<const uint16_t*>(b);
    size_t i      = 0;
    for (; i + chunk_elems <= n; i += chunk_elems) {
        reduce_chunk<Codec, Op>(d + i, x + i, y + i);
    }
    for (; i < n; ++i) {  // tail: element i is read before it is written, so aliasing is fine
        d[i] = Codec::narrow(Op::apply(Codec::widen(x[i]), Codec::widen(y[i])));
    }
}

template <class Op>
LOOM_REDUCE_CLONES void kernel_bfloat16(void* dst, const void* a, const void* b, size_t n) {
    run16<bfloat16_codec, Op>(dst, a, b, n);
}

template <class Op>
void kernel_half(void* dst, const void* a, const void* b, size_t n) {
    run16<half_codec, Op>(dst, a, b, n);
}

#if LOOM_REDUCE_X86
// float16 through F16C: vcvtph2ps / vcvtps2ph (explicitly round to nearest even) convert 8
// elements per instruction; the float operators between them vectorise with AVX2. Same bits
// as the integer conversions: both are exact or round to nearest even, and a NaN reaching
// the narrowing has been quieted by the operator.
template <class Op>
[[gnu::target("avx2,f16c")]] void kernel_half_f16c(void* dst, const void* a, const void* b,
                                                   size_t n) {
    auto* d       = static_cast<uint16_t*>(dst);
    const auto* x = static_cast<const uint16_t*>(a);
    const auto* y = static_cast<const uint16_t*>(b);
    size_t i      = 0;
    for (; i + chunk_elems <= n; i += chunk_elems) {
        alignas(32) float fa[chunk_elems];
        alignas(32) float fb[chunk_elems];
        for (size_t j = 0; j < chunk_elems; j += 8) {  // both read before d is written
            const auto* xa = reinterpret_cast<const __m128i*>(x + i + j);
            const auto* yb = reinterpret_cast<const __m128i*>(y + i + j);
            _mm256_store_ps(fa + j, _mm256_cvtph_ps(_mm_loadu_si128(xa)));
            _mm256_store_ps(fb + j, _mm256_cvtph_ps(_mm_loadu_si128(yb)));
        }
        for (size_t j = 0; j < chunk_elems; ++j) {
            fa[j] = Op::apply(fa[j], fb[j]);
        }
        for (size_t j = 0; j < chunk_elems; j += 8) {
            const __m128i h = _mm256_cvtps_ph(_mm256_load_ps(fa + j), _MM_FROUND_TO_NEAREST_INT);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + j), h);
        }
    }
    for (; i < n; ++i) {
        d[i] = narrow_half<true>(Op::apply(widen_half(x[i]), widen_half(y[i])));
    }
}

struct half_codec_f16c {};  // selects kernel_half_f16c in `sixteen`

bool cpu_has_f16c() {
    __builtin_cpu_init();  // harmless if done; needed if called before constructors ran
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
#endif

// K<Codec, Op> for detail::pick.
template <class Codec, class Op>
struct sixteen;

template <class Op>
struct sixteen<bfloat16_codec, Op> {
    static constexpr reduce_fn run = &kernel_bfloat16<Op>;
};

template <class Op>
struct sixteen<half_codec, Op> {
    static constexpr reduce_fn run = &kernel_half<Op>;
};

#if LOOM_REDUCE_X86
template <class Op>
struct sixteen<half_codec_f16c, Op> {
    static constexpr reduce_fn run = &kernel_half_f16c<Op>;
};
#endif

// ---- average ------------------------------------------------------------------------------

template <class Codec>
void divide_all16(void* buf, size_t count, int n) {
    auto* p        = static_cast<uint16_t*>(buf);
    const float by = static_cast<float>(n);
    alignas(64) float f[chunk_elems];
    size_t i = 0;
    for (; i + chunk_elems <= count; i += chunk_elems) {  // constant trip counts: vectorised
        for (size_t j = 0; j < chunk_elems; ++j) {
            f[j] = Codec::widen(p[i + j]);
        }
        for (size_t j = 0; j < chunk_elems; ++j) {
            p[i + j] = Codec::narrow(f[j] / by);
        }
    }
    for (; i < count; ++i) {
        p[i] = Codec::narrow(Codec::widen(p[i]) / by);
    }
}

}  // namespace

namespace detail {

reduce_fn sixteen_kernel(loom_dtype_t dtype, loom_op_t op) {
    if (dtype == LOOM_BFLOAT16) {
        return pick<bfloat16_codec, sixteen>(op);
    }
    if (dtype != LOOM_FLOAT16) {
        return nullptr;
    }
#if LOOM_REDUCE_X86
    if (cpu_has_f16c()) {
        return pick<half_codec_f16c, sixteen>(op);
    }
#endif
    return pick<half_codec, sixteen>(op);
}

void sixteen_average(void* buf, loom_dtype_t dtype, size_t count, int n) {
    if (dtype == LOOM_FLOAT16) {
        divide_all16<half_codec>(buf, count, n);
    } else if (dtype == LOOM_BFLOAT16) {
        divide_all16<bfloat16_codec>(buf, count, n);
    }
}

}  // namespace detail

uint16_t float_to_half(float f) {
    return narrow_half<false>(f);
}

float half_to_float(uint16_t h) {
    return widen_half(h);
}

uint16_t float_to_bfloat16(float f) {
    return narrow_bfloat16<false>(f);
}

float bfloat16_to_float(uint16_t b) {
    return widen_bfloat16(b);
}

}  // namespace loom::kernels
