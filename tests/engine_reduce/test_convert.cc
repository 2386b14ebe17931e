// SPDX-License-Identifier: Apache-2.0
// float16 / bfloat16 <-> float32 conversions of runtime/kernels/reduce.hh: every 16-bit
// pattern widens exactly and survives a round trip; narrowing rounds to nearest even at every
// midpoint between adjacent codes, overflows to infinity, keeps subnormals and NaNs; random
// floats agree with two independent references, a table search and frexp/ldexp arithmetic
// (and with the compiler's _Float16 conversion where it has one).
#include <cstdio>
#include <random>
#include <string>

#include "kernels/reduce.hh"
#include "reference.hh"
#include "test_case.hh"

namespace {

using loom::test::format16;

struct codec {
    const char* name;
    const format16& format;
    uint16_t (*narrow)(float);
    float (*widen)(uint16_t);
};

const codec half_codec{"float16", loom::test::half_format, loom::kernels::float_to_half,
                       loom::kernels::half_to_float};
const codec bf16_codec{"bfloat16", loom::test::bfloat16_format, loom::kernels::float_to_bfloat16,
                       loom::kernels::bfloat16_to_float};

uint32_t bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

std::string hex(uint32_t v) {
    char s[16];
    std::snprintf(s, sizeof(s), "0x%08x", v);
    return s;
}

// Narrows x with the kernel and the reference; NaN results only need to be NaN.
void expect_narrow(const codec& c, float x, uint16_t expected) {
    const uint16_t got = c.narrow(x);
    if (c.format.is_nan(expected) ? c.format.is_nan(got) : got == expected) {
        return;
    }
    LOOM_FAIL(std::string(c.name) + ": narrow(" + hex(bits(x)) + ") = " + hex(got) + ", expected " +
              hex(expected));
}

// The kernel and both references all give `expected`.
void expect_all(const codec& c, float x, uint16_t expected) {
    expect_narrow(c, x, expected);
    const uint16_t by_arith = loom::test::ref_narrow(c.format, x);
    const uint16_t by_table = loom::test::table_narrow(c.format, x);
    if (by_arith != expected || by_table != expected) {
        LOOM_FAIL(std::string(c.name) + ": reference disagrees at " + hex(bits(x)) + ": " +
                  hex(by_arith) + " / " + hex(by_table) + ", expected " + hex(expected));
    }
}

void widen_exhaustive(const codec& c) {
    for (uint32_t v = 0; v < 65536; ++v) {
        const auto code  = uint16_t(v);
        const float got  = c.widen(code);
        const float want = loom::test::ref_widen(c.format, code);
        if (bits(got) != bits(want)) {
            LOOM_FAIL(std::string(c.name) + ": widen(" + hex(v) + ") = " + hex(bits(got)) +
                      ", expected " + hex(bits(want)));
        }
        if (c.narrow(got) != code) {
            LOOM_FAIL(std::string(c.name) + ": round trip of " + hex(v) + " gave " +
                      hex(c.narrow(got)));
        }
    }
}

// Between every pair of adjacent positive codes (the last pair is max-finite and infinity):
// the exact midpoint goes to the even code, one float ulp below to the lower, above to the
// upper; the same with the sign set.
void midpoints(const codec& c) {
    const std::vector<double>& v = loom::test::positive_values(c.format);
    for (size_t lo = 0; lo + 1 < v.size(); ++lo) {
        const double mid_d = (v[lo] + v[lo + 1]) / 2;
        const auto mid     = float(mid_d);
        assert_true(double(mid) == mid_d);  // representable, so the tie is really tested
        const auto even   = uint16_t(lo % 2 == 0 ? lo : lo + 1);
        const float below = std::nextafter(mid, 0.0f);
        const float above = std::nextafter(mid, HUGE_VALF);
        for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
            const float s = sign ? -1.0f : 1.0f;
            expect_all(c, s * mid, uint16_t(sign | even));
            expect_all(c, s * below, uint16_t(sign | lo));
            expect_all(c, s * above, uint16_t(sign | (lo + 1)));
            expect_all(c, s * float(v[lo]), uint16_t(sign | lo));
        }
    }
}

// Random floats: all 32-bit patterns, and patterns concentrated on the format's range
// (including its subnormals and the overflow boundary).
void random_against_reference(const codec& c, uint32_t seed) {
    std::printf("# %s random narrowing, seed %u\n", c.name, seed);
    std::mt19937 rng(seed);
    const int lo_exp = 127 - c.format.bias() - c.format.mant_bits - 3;
    const int hi_exp = 127 + c.format.bias() + 2;
    std::uniform_int_distribution<int> exp(lo_exp, std::min(hi_exp, 255));
    for (int i = 0; i < (1 << 20); ++i) {
        uint32_t u = rng();
        if (i % 2 == 1) {
            u = (u & 0x807fffffu) | (uint32_t(exp(rng)) << 23);
        }
        const float x = std::bit_cast<float>(u);
        expect_narrow(c, x, loom::test::ref_narrow(c.format, x));
        expect_narrow(c, x, loom::test::table_narrow(c.format, x));
#if defined(__FLT16_MANT_DIG__)
        if (c.format.mant_bits == 10 && !std::isnan(x)) {
            const auto h = static_cast<_Float16>(x);  // the compiler's own conversion
            uint16_t hb;
            std::memcpy(&hb, &h, sizeof(hb));
            expect_narrow(c, x, hb);
        }
#endif
    }
}

// Named corner cases, so a failure reads as what broke.
void test_corner_cases(void**) {
    expect_narrow(half_codec, 65504.0f, 0x7bff);   // largest finite
    expect_narrow(half_codec, 65519.99f, 0x7bff);  // just below the overflow midpoint
    expect_narrow(half_codec, 65520.0f, 0x7c00);   // midpoint, odd max: rounds to infinity
    expect_narrow(half_codec, 1e9f, 0x7c00);
    expect_narrow(half_codec, -HUGE_VALF, 0xfc00);
    expect_narrow(half_codec, -0.0f, 0x8000);
    expect_narrow(half_codec, std::ldexp(1.0f, -24), 0x0001);      // smallest subnormal
    expect_narrow(half_codec, std::ldexp(1.0f, -25), 0x0000);      // tie to even (zero)
    expect_narrow(half_codec, std::ldexp(3.0f, -25), 0x0002);      // 1.5 ulp: tie to 2
    expect_narrow(half_codec, std::ldexp(1023.75f, -24), 0x0400);  // rounds up to normal
    expect_narrow(half_codec, std::ldexp(1023.25f, -24), 0x03ff);  // largest subnormal
    expect_narrow(half_codec, -1e-30f, 0x8000);                    // underflow keeps sign
    // NaN: payload kept at the top; an all-low payload becomes the quiet NaN.
    assert_int_equal(half_codec.narrow(std::bit_cast<float>(0x7fc02000u)), 0x7e01);
    assert_int_equal(half_codec.narrow(std::bit_cast<float>(0x7f800001u)), 0x7e00);
    assert_int_equal(half_codec.narrow(std::bit_cast<float>(0xffa00000u)), 0xfd00);
    expect_narrow(bf16_codec, std::bit_cast<float>(0x7f7fffffu), 0x7f80);  // rounds to inf
    expect_narrow(bf16_codec, std::bit_cast<float>(0x3f808000u), 0x3f80);  // tie, even below
    expect_narrow(bf16_codec, std::bit_cast<float>(0x3f818000u), 0x3f82);  // tie, even above
    expect_narrow(bf16_codec, std::bit_cast<float>(0x00008000u), 0x0000);  // subnormal tie
    expect_narrow(bf16_codec, std::bit_cast<float>(0x00018000u), 0x0002);
    assert_int_equal(bf16_codec.narrow(std::bit_cast<float>(0x7f800001u)), 0x7fc0);
    assert_int_equal(bf16_codec.narrow(std::bit_cast<float>(0xffc12345u)), 0xffc1);
}

}  // namespace

LOOM_TEST_MAIN("engine_reduce_convert",
               LOOM_CASE(test_half_widen_round_trip, widen_exhaustive(half_codec)),
               LOOM_CASE(test_bfloat16_widen_round_trip, widen_exhaustive(bf16_codec)),
               LOOM_CASE(test_half_midpoints, midpoints(half_codec)),
               LOOM_CASE(test_bfloat16_midpoints, midpoints(bf16_codec)),
               LOOM_CASE(test_half_random, random_against_reference(half_codec, 20240601u)),
               LOOM_CASE(test_bfloat16_random, random_against_reference(bf16_codec, 20240602u)),
               cmocka_unit_test(test_corner_cases))
