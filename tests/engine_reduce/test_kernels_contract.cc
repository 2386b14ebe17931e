// SPDX-License-Identifier: Apache-2.0
// The rest of reduce.hh's contract: finish_average per dtype, invalid (dtype, op) pairs,
// IEEE 754-2019 minimum/maximum (NaN propagates, -0 < +0, commutative bit for bit), and
// copy_bytes. Registered in test_kernels.cc's group.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/reduce.hh"
#include "reference.hh"
#include "test_main.hh"

using loom::kernels::finish_average;
using loom::kernels::reduce_kernel;

namespace {

constexpr int divisors[]       = {1, 3, 8, 200};
constexpr size_t avg_lengths[] = {7, 1000003};

template <class T, class Ref, class Eq>
void check_average(loom_dtype_t dtype, const char* name, Ref ref, Eq equal) {
    std::mt19937 rng(4242 + uint32_t(dtype));
    for (size_t n : avg_lengths) {
        std::vector<T> v(n);
        for (T& x : v) {
            const uint64_t r = uint64_t(rng()) << 32 | rng();
            if constexpr (std::is_floating_point_v<T>) {
                x = T(int64_t(r % 2000001) - 1000000) / T(7);
            } else {
                x = T(r);
            }
        }
        for (int d : divisors) {
            std::vector<T> got = v;
            finish_average(got.data(), dtype, n, d);
            for (size_t i = 0; i < n; ++i) {
                const T want = d == 1 ? v[i] : ref(v[i], d);
                if (!equal(got[i], want)) {
                    LOOM_FAIL(std::string(name) + ": finish_average by " + std::to_string(d) +
                              " of element " + std::to_string(i) + " is wrong");
                }
            }
        }
    }
}

template <class T>
void check_integer_average(loom_dtype_t dtype, const char* name) {
    // Truncating division toward zero, computed in the 64-bit type of the same signedness.
    check_average<T>(
        dtype, name,
        [](T x, int d) {
            using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
            return T(W(x) / W(d));
        },
        [](T x, T y) { return x == y; });
}

template <class F>
void check_float_average(loom_dtype_t dtype, const char* name) {
    check_average<F>(
        dtype, name, [](F x, int d) { return x / F(d); },
        [](F x, F y) { return std::memcmp(&x, &y, sizeof(F)) == 0; });
}

void check_sixteen_average(loom_dtype_t dtype, const char* name, const loom::test::format16& f) {
    check_average<uint16_t>(
        dtype, name,
        [&f](uint16_t x, int d) {
            return loom::test::ref_narrow(f, loom::test::ref_widen(f, x) / float(d));
        },
        [&f](uint16_t got, uint16_t want) { return f.is_nan(want) ? f.is_nan(got) : got == want; });
}

// Runs the (dtype, op) kernel on one pair and returns dst.
template <class T>
T apply(loom_dtype_t dtype, loom_op_t op, T a, T b) {
    T d{};
    reduce_kernel(dtype, op)(&d, &a, &b, 1);
    return d;
}

template <class F, class U>
void check_min_max(loom_dtype_t dtype, const char* name) {
    const F nan = std::numeric_limits<F>::quiet_NaN();
    const F inf = std::numeric_limits<F>::infinity();
    const F pz = F(0), nz = -F(0);
    auto bits = [](F v) { return std::bit_cast<U>(v); };
    for (F x : {F(1), F(-1), inf, -inf, pz, nz, nan}) {
        assert_true(std::isnan(apply(dtype, LOOM_MIN, nan, x)));
        assert_true(std::isnan(apply(dtype, LOOM_MIN, x, nan)));
        assert_true(std::isnan(apply(dtype, LOOM_MAX, nan, x)));
        assert_true(std::isnan(apply(dtype, LOOM_MAX, x, nan)));
    }
    assert_true(bits(apply(dtype, LOOM_MIN, pz, nz)) == bits(nz));
    assert_true(bits(apply(dtype, LOOM_MIN, nz, pz)) == bits(nz));
    assert_true(bits(apply(dtype, LOOM_MAX, pz, nz)) == bits(pz));
    assert_true(bits(apply(dtype, LOOM_MAX, nz, pz)) == bits(pz));
    assert_true(apply(dtype, LOOM_MIN, inf, -inf) == -inf);
    assert_true(apply(dtype, LOOM_MAX, -inf, inf) == inf);
    // Commutative bit for bit, NaN payloads included, and NaN results are quiet.
    std::mt19937_64 rng(99);
    const U quiet = U(1) << (std::numeric_limits<F>::digits - 2);
    for (int i = 0; i < 10000; ++i) {
        const U ua = U(rng()), ub = i % 2 ? U(rng()) : ua ^ (U(1) << (sizeof(U) * 8 - 1));
        const F a = std::bit_cast<F>(ua), b = std::bit_cast<F>(ub);
        for (loom_op_t op : {LOOM_MIN, LOOM_MAX}) {
            const U ab = bits(apply(dtype, op, a, b)), ba = bits(apply(dtype, op, b, a));
            if (ab != ba) {
                LOOM_FAIL(std::string(name) + ": min/max not commutative bit for bit");
            }
            if (std::isnan(std::bit_cast<F>(ab)) && (ab & quiet) == 0) {
                LOOM_FAIL(std::string(name) + ": min/max returned a signaling NaN");
            }
        }
    }
}

// The same through float16 / bfloat16 codes.
void check_min_max16(loom_dtype_t dtype, const loom::test::format16& f) {
    const uint16_t nan = uint16_t(f.inf_code() | (1u << (f.mant_bits - 1)));
    const uint16_t one = loom::test::ref_narrow(f, 1.0f);
    assert_true(f.is_nan(apply<uint16_t>(dtype, LOOM_MIN, nan, one)));
    assert_true(f.is_nan(apply<uint16_t>(dtype, LOOM_MAX, one, nan)));
    assert_int_equal(apply<uint16_t>(dtype, LOOM_MIN, 0x0000, 0x8000), 0x8000);
    assert_int_equal(apply<uint16_t>(dtype, LOOM_MAX, 0x8000, 0x0000), 0x0000);
    for (uint32_t a = 0; a < 65536; a += 97) {
        for (uint32_t b = 0; b < 65536; b += 89) {
            for (loom_op_t op : {LOOM_MIN, LOOM_MAX}) {
                assert_int_equal(apply<uint16_t>(dtype, op, uint16_t(a), uint16_t(b)),
                                 apply<uint16_t>(dtype, op, uint16_t(b), uint16_t(a)));
            }
        }
    }
}

}  // namespace

void test_finish_average(void**) {
    check_integer_average<int8_t>(LOOM_INT8, "int8");
    check_integer_average<uint8_t>(LOOM_UINT8, "uint8");
    check_integer_average<int32_t>(LOOM_INT32, "int32");
    check_integer_average<uint32_t>(LOOM_UINT32, "uint32");
    check_integer_average<int64_t>(LOOM_INT64, "int64");
    check_integer_average<uint64_t>(LOOM_UINT64, "uint64");
    check_sixteen_average(LOOM_FLOAT16, "float16", loom::test::half_format);
    check_sixteen_average(LOOM_BFLOAT16, "bfloat16", loom::test::bfloat16_format);
    check_float_average<float>(LOOM_FLOAT32, "float32");
    check_float_average<double>(LOOM_FLOAT64, "float64");
    // Unknown dtype, n <= 1 and count 0 leave the buffer alone.
    int32_t x = 12;
    finish_average(&x, static_cast<loom_dtype_t>(77), 1, 4);
    finish_average(&x, LOOM_INT32, 1, 0);
    finish_average(nullptr, LOOM_INT32, 0, 4);
    assert_int_equal(x, 12);
}

void test_invalid_pairs(void**) {
    for (int d = 0; d < LOOM_DTYPE_COUNT; ++d) {
        for (int o = 0; o < LOOM_OP_COUNT; ++o) {
            assert_non_null(reduce_kernel(loom_dtype_t(d), loom_op_t(o)));
        }
        assert_null(reduce_kernel(loom_dtype_t(d), LOOM_OP_COUNT));
        assert_null(reduce_kernel(loom_dtype_t(d), static_cast<loom_op_t>(-1)));
        assert_null(reduce_kernel(loom_dtype_t(d), static_cast<loom_op_t>(1000)));
    }
    assert_null(reduce_kernel(LOOM_DTYPE_COUNT, LOOM_SUM));
    assert_null(reduce_kernel(static_cast<loom_dtype_t>(-1), LOOM_SUM));
    assert_null(reduce_kernel(static_cast<loom_dtype_t>(77), LOOM_MAX));
    // avg reduces as sum: the very same kernel.
    for (int d = 0; d < LOOM_DTYPE_COUNT; ++d) {
        assert_ptr_equal(reduce_kernel(loom_dtype_t(d), LOOM_AVG),
                         reduce_kernel(loom_dtype_t(d), LOOM_SUM));
    }
}

void test_min_max_ieee(void**) {
    check_min_max<float, uint32_t>(LOOM_FLOAT32, "float32");
    check_min_max<double, uint64_t>(LOOM_FLOAT64, "float64");
    check_min_max16(LOOM_FLOAT16, loom::test::half_format);
    check_min_max16(LOOM_BFLOAT16, loom::test::bfloat16_format);
}

void test_copy_bytes(void**) {
    loom::kernels::copy_bytes(nullptr, nullptr, 0);  // allowed: nothing to copy
    std::vector<uint8_t> src(1000003), dst(src.size() + 1, 0xee);
    for (size_t i = 0; i < src.size(); ++i) {
        src[i] = uint8_t(i * 31 + 7);
    }
    loom::kernels::copy_bytes(dst.data(), src.data(), src.size());
    assert_memory_equal(dst.data(), src.data(), src.size());
    assert_int_equal(dst.back(), 0xee);
}
