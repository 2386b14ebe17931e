// SPDX-License-Identifier: Apache-2.0
// Straightforward scalar references for the reduction kernels, written independently of
// runtime/kernels/reduce.cc: 16-bit floats are decoded with ldexp from their fields and
// rounded by searching a table of every finite value and comparing with the exact midpoint
// (ties to the even code), rather than by bit tricks.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <loom/loom.h>

namespace loom::test {

/// A 16-bit IEEE-style format: exponent bits, mantissa bits (half: 5/10, bfloat16: 8/7).
struct format16 {
    int exp_bits;
    int mant_bits;

    int bias() const { return (1 << (exp_bits - 1)) - 1; }
    uint16_t inf_code() const { return uint16_t(((1u << exp_bits) - 1) << mant_bits); }
    uint16_t mant_mask() const { return uint16_t((1u << mant_bits) - 1); }

    /// Exact value of a non-NaN code (infinity as HUGE_VAL).
    double value(uint16_t c) const {
        const int e      = (c >> mant_bits) & ((1 << exp_bits) - 1);
        const int m      = c & mant_mask();
        const double mag = e == 0 ? std::ldexp(m, 1 - bias() - mant_bits)
                           : e == (1 << exp_bits) - 1
                               ? HUGE_VAL
                               : std::ldexp((1 << mant_bits) + m, e - bias() - mant_bits);
        return (c & 0x8000u) ? -mag : mag;
    }
    bool is_nan(uint16_t c) const { return (c & 0x7fffu) > inf_code(); }
};

inline constexpr format16 half_format{5, 10};
inline constexpr format16 bfloat16_format{8, 7};

/// Every positive finite value in code order, plus the value infinity stands for when
/// rounding (the next power of two after the largest finite value).
inline const std::vector<double>& positive_values(const format16& f) {
    static std::vector<double> half_values, bf_values;
    std::vector<double>& v = f.mant_bits == 10 ? half_values : bf_values;
    if (v.empty()) {
        for (uint16_t c = 0; c < f.inf_code(); ++c) {
            v.push_back(f.value(c));
        }
        v.push_back(std::ldexp(1.0, f.bias() + 1));
    }
    return v;
}

/// float -> code by searching the table of every value: round to nearest, ties to the even
/// code; NaN -> some NaN code. Obviously right, but slow (a binary search per value).
inline uint16_t table_narrow(const format16& f, float x) {
    if (std::isnan(x)) {
        return uint16_t(f.inf_code() | (1u << (f.mant_bits - 1)));
    }
    const uint16_t sign          = std::signbit(x) ? 0x8000u : 0u;
    const double ax              = std::fabs(double(x));
    const std::vector<double>& v = positive_values(f);
    if (ax >= v.back()) {
        return uint16_t(sign | f.inf_code());
    }
    // v[lo] <= ax < v[lo + 1]; v.back() stands for infinity.
    const size_t lo  = size_t(std::upper_bound(v.begin(), v.end(), ax) - v.begin()) - 1;
    const double mid = (v[lo] + v[lo + 1]) / 2;  // exact: at most 12 significant bits
    size_t code      = ax < mid ? lo : ax > mid ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
    return uint16_t(sign | code);
}

/// The same by arithmetic (frexp, ldexp, floor; fast enough for millions of elements): the
/// step q of |x|'s binade, k = floor(|x| / q), then k or k + 1 by the midpoint, ties to even
/// k (whose parity is the code's), and the value encoded from its exponent and mantissa.
inline uint16_t ref_narrow(const format16& f, float x) {
    if (std::isnan(x)) {
        return uint16_t(f.inf_code() | (1u << (f.mant_bits - 1)));
    }
    const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
    const double ax     = std::fabs(double(x));
    const int min_exp   = 1 - f.bias();  // exponent of the smallest normal
    int e               = 0;
    std::frexp(ax, &e);  // ax = m * 2^e, m in [0.5, 1)
    const int binade   = ax < std::ldexp(1.0, min_exp) ? min_exp : e - 1;
    const double q     = std::ldexp(1.0, binade - f.mant_bits);
    const double k     = std::floor(ax / q);  // exact: q is a power of two
    const double mid   = (k + 0.5) * q;
    const double kept  = ax < mid ? k : ax > mid ? k + 1 : (std::fmod(k, 2) == 0 ? k : k + 1);
    const double value = kept * q;
    if (value >= std::ldexp(1.0, f.bias() + 1)) {
        return uint16_t(sign | f.inf_code());
    }
    if (value < std::ldexp(1.0, min_exp)) {
        return uint16_t(sign | uint16_t(value / std::ldexp(1.0, min_exp - f.mant_bits)));
    }
    std::frexp(value, &e);
    const int field_e = e - 1 + f.bias();
    const double field_m =
        value / std::ldexp(1.0, e - 1 - f.mant_bits) - std::ldexp(1.0, f.mant_bits);
    return uint16_t(sign | (field_e << f.mant_bits) | int(field_m));
}

/// code -> float: exact for numbers; NaN keeps sign and payload at the top of the float's.
inline float ref_widen(const format16& f, uint16_t c) {
    if (f.is_nan(c)) {
        const uint32_t bits = (uint32_t(c & 0x8000u) << 16) | 0x7f800000u |
                              (uint32_t(c & f.mant_mask()) << (23 - f.mant_bits));
        return std::bit_cast<float>(bits);
    }
    return float(f.value(c));
}

/// IEEE 754-2019 minimum / maximum, case by case.
template <class F>
F ref_min(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) {
        return std::numeric_limits<F>::quiet_NaN();
    }
    if (a == b) {
        return std::signbit(a) ? a : b;  // -0 beats +0
    }
    return a < b ? a : b;
}

template <class F>
F ref_max(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) {
        return std::numeric_limits<F>::quiet_NaN();
    }
    if (a == b) {
        return std::signbit(a) ? b : a;  // +0 beats -0
    }
    return a > b ? a : b;
}

/// One element of the reference: integers wrap (computed in uint64_t, then truncated).
template <class T>
T ref_op(loom_op_t op, T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        const uint64_t ua = uint64_t(a), ub = uint64_t(b);
        switch (op) {
            case LOOM_SUM:
            case LOOM_AVG:
                return T(ua + ub);
            case LOOM_PROD:
                return T(ua * ub);
            case LOOM_MIN:
                return std::min(a, b);
            default:
                return std::max(a, b);
        }
    } else {
        switch (op) {
            case LOOM_SUM:
            case LOOM_AVG:
                return a + b;
            case LOOM_PROD:
                return a * b;
            case LOOM_MIN:
                return ref_min(a, b);
            default:
                return ref_max(a, b);
        }
    }
}

/// Widen, reduce in float, round once: the same recipe the kernels promise.
inline uint16_t ref_op16(const format16& f, loom_op_t op, uint16_t a, uint16_t b) {
    return ref_narrow(f, ref_op<float>(op, ref_widen(f, a), ref_widen(f, b)));
}

}  // namespace loom::test
