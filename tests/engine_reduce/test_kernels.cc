// SPDX-License-Identifier: Apache-2.0
// Reduction kernels of runtime/kernels/reduce.hh against a straightforward scalar reference
// (reference.hh): every dtype × op, lengths 0, 1, 7, 33, 4099 and 1000003 (odd, so every
// block and chunk loop has a tail), out of place and in place (dst == a, dst == b, and
// dst == a == b up to 4099).
//
// Bound: integers are bit-exact. Floats are bit-exact too, for every op: each element is one
// IEEE operation (float16/bfloat16: widen, one float32 operation, one rounding), exactly what
// the reference does, so the bound for sum/prod/avg is 0 ulp; a NaN result only has to be a
// NaN (its payload is the hardware's choice). Also: avg reduces as sum; finish_average per
// dtype; invalid (dtype, op) pairs give nullptr; nothing is written past `count`.
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/reduce.hh"
#include "reference.hh"
#include "test_case.hh"

namespace {

using loom::kernels::reduce_fn;
using loom::kernels::reduce_kernel;

constexpr size_t lengths[] = {0, 1, 7, 33, 4099, 1000003};
// dst == a == b is checked up to this length (enough for many blocks and chunks); skipping
// it on the longest length keeps the ASan build of this test well under a minute.
constexpr size_t all_same_max = 4099;
constexpr loom_op_t ops[]     = {LOOM_SUM, LOOM_PROD, LOOM_MIN, LOOM_MAX, LOOM_AVG};
constexpr size_t guard        = 64;  // elements after `count` that must stay untouched
constexpr uint32_t seed       = 7919;

enum class alias { distinct, dst_is_a, dst_is_b, all_same };
constexpr alias aliases[] = {alias::distinct, alias::dst_is_a, alias::dst_is_b, alias::all_same};
constexpr const char* alias_names[] = {"out of place", "dst == a", "dst == b", "dst == a == b"};

// What one dtype needs: its element type, a generator, the reference, an equality.
template <class T>
struct dtype_case {
    loom_dtype_t dtype;
    const char* name;
    std::function<T(std::mt19937&)> gen;
    std::function<T(loom_op_t, T, T)> ref;
    std::function<bool(T, T)> equal;  // (got, want)
};

// Floats: mostly moderate values (sums and products are meaningful), with signed zeros,
// infinities, NaNs, subnormals and extremes mixed in.
template <class F>
F gen_float(std::mt19937& rng) {
    using lim                = std::numeric_limits<F>;
    static const F special[] = {F(0),
                                -F(0),
                                lim::infinity(),
                                -lim::infinity(),
                                lim::quiet_NaN(),
                                -lim::quiet_NaN(),
                                lim::denorm_min(),
                                -lim::denorm_min(),
                                lim::max(),
                                lim::lowest(),
                                lim::min(),
                                F(1),
                                F(-1)};
    if (rng() % 10 == 0) {
        return special[rng() % (sizeof(special) / sizeof(special[0]))];
    }
    const F mant = std::uniform_real_distribution<F>(-2, 2)(rng);
    return std::ldexp(mant, int(rng() % 17) - 8);
}

template <class F>
bool float_equal(F got, F want) {
    if (std::isnan(want)) {
        return std::isnan(got);
    }
    return std::memcmp(&got, &want, sizeof(F)) == 0;
}

template <class T>
std::string show(T v) {
    if constexpr (std::is_floating_point_v<T>) {
        char s[64];
        std::snprintf(s, sizeof(s), "%a", double(v));
        return s;
    } else {
        return std::to_string(+v);
    }
}

template <class T>
T negate(const dtype_case<T>& c, T v) {
    if constexpr (std::is_floating_point_v<T>) {
        return -v;
    } else if (c.dtype == LOOM_FLOAT16 || c.dtype == LOOM_BFLOAT16) {
        return T(v ^ 0x8000u);  // the sign bit
    } else {
        return T(uint64_t(0) - uint64_t(v));
    }
}

// b gets some copies and negations of a, so min/max ties and x + (-x) occur.
template <class T>
void make_operands(const dtype_case<T>& c, std::mt19937& rng, size_t n, std::vector<T>& a,
                   std::vector<T>& b) {
    a.resize(n);
    b.resize(n);
    for (size_t i = 0; i < n; ++i) {
        a[i]             = c.gen(rng);
        const uint32_t r = rng() % 100;
        if (r < 5) {
            b[i] = a[i];
        } else if (r < 7) {
            b[i] = negate(c, a[i]);
        } else {
            b[i] = c.gen(rng);
        }
    }
}

template <class T>
void check_one(const dtype_case<T>& c, loom_op_t op, alias m, const std::vector<T>& a,
               const std::vector<T>& b, const std::vector<T>& want) {
    const size_t n      = a.size();
    const reduce_fn k   = reduce_kernel(c.dtype, op);
    const T sentinel    = T(0x5a);
    std::vector<T> work = m == alias::dst_is_b ? b : a;
    work.resize(n + guard, sentinel);
    std::vector<T> a_copy = a, b_copy = b;
    switch (m) {
        case alias::distinct:
            std::fill(work.begin(), work.end(), sentinel);
            k(work.data(), a_copy.data(), b_copy.data(), n);
            break;
        case alias::dst_is_a:
            k(work.data(), work.data(), b_copy.data(), n);
            break;
        case alias::dst_is_b:
            k(work.data(), a_copy.data(), work.data(), n);
            break;
        case alias::all_same:
            k(work.data(), work.data(), work.data(), n);
            break;
    }
    for (size_t i = 0; i < n; ++i) {
        if (!c.equal(work[i], want[i])) {
            LOOM_FAIL(std::string(c.name) + " op " + std::to_string(op) +
                      " n=" + std::to_string(n) + " " + alias_names[int(m)] + ": element " +
                      std::to_string(i) + " is " + show(work[i]) + ", expected " + show(want[i]));
        }
    }
    for (size_t i = n; i < n + guard; ++i) {
        if (std::memcmp(&work[i], &sentinel, sizeof(T)) != 0) {
            LOOM_FAIL(std::string(c.name) + ": wrote past count " + std::to_string(n));
        }
    }
    const size_t bytes = n * sizeof(T);  // bytes, not ==: NaN != NaN
    if (m == alias::distinct && bytes > 0 &&
        (std::memcmp(a_copy.data(), a.data(), bytes) != 0 ||
         std::memcmp(b_copy.data(), b.data(), bytes) != 0)) {
        LOOM_FAIL(std::string(c.name) + ": an input operand was modified");
    }
}

template <class T>
void run_case(const dtype_case<T>& c) {
    std::mt19937 rng(seed + uint32_t(c.dtype));
    std::printf("# %s: seed %u\n", c.name, seed + uint32_t(c.dtype));
    std::vector<T> a, b, want_ab, want_aa;
    for (size_t n : lengths) {
        make_operands(c, rng, n, a, b);
        for (loom_op_t op : ops) {
            const bool all_same = n <= all_same_max;
            want_ab.resize(n);
            want_aa.resize(all_same ? n : 0);
            for (size_t i = 0; i < n; ++i) {
                want_ab[i] = c.ref(op, a[i], b[i]);
            }
            for (size_t i = 0; i < want_aa.size(); ++i) {
                want_aa[i] = c.ref(op, a[i], a[i]);
            }
            for (alias m : aliases) {
                if (m == alias::all_same && !all_same) {
                    continue;
                }
                check_one(c, op, m, a, b, m == alias::all_same ? want_aa : want_ab);
            }
        }
    }
}

template <class T>
dtype_case<T> integer_case(loom_dtype_t dtype, const char* name) {
    return {dtype, name, [](std::mt19937& rng) { return T(uint64_t(rng()) << 32 | rng()); },
            loom::test::ref_op<T>, [](T x, T y) { return x == y; }};
}

template <class F>
dtype_case<F> float_case(loom_dtype_t dtype, const char* name) {
    return {dtype, name, gen_float<F>, loom::test::ref_op<F>, float_equal<F>};
}

dtype_case<uint16_t> sixteen_case(loom_dtype_t dtype, const char* name,
                                  const loom::test::format16& f) {
    return {
        dtype, name, [](std::mt19937& rng) { return uint16_t(rng()); },
        [&f](loom_op_t op, uint16_t x, uint16_t y) { return loom::test::ref_op16(f, op, x, y); },
        [&f](uint16_t got, uint16_t want) { return f.is_nan(want) ? f.is_nan(got) : got == want; }};
}

}  // namespace

// finish_average and the remaining contract checks live in test_kernels_contract.cc.
void test_finish_average(void**);
void test_invalid_pairs(void**);
void test_min_max_ieee(void**);
void test_copy_bytes(void**);

LOOM_TEST_MAIN("engine_reduce_kernels",
               LOOM_CASE(test_int8, run_case(integer_case<int8_t>(LOOM_INT8, "int8"))),
               LOOM_CASE(test_uint8, run_case(integer_case<uint8_t>(LOOM_UINT8, "uint8"))),
               LOOM_CASE(test_int32, run_case(integer_case<int32_t>(LOOM_INT32, "int32"))),
               LOOM_CASE(test_uint32, run_case(integer_case<uint32_t>(LOOM_UINT32, "uint32"))),
               LOOM_CASE(test_int64, run_case(integer_case<int64_t>(LOOM_INT64, "int64"))),
               LOOM_CASE(test_uint64, run_case(integer_case<uint64_t>(LOOM_UINT64, "uint64"))),
               LOOM_CASE(test_float16,
                         run_case(sixteen_case(LOOM_FLOAT16, "float16", loom::test::half_format))),
               LOOM_CASE(test_bfloat16, run_case(sixteen_case(LOOM_BFLOAT16, "bfloat16",
                                                              loom::test::bfloat16_format))),
               LOOM_CASE(test_float32, run_case(float_case<float>(LOOM_FLOAT32, "float32"))),
               LOOM_CASE(test_float64, run_case(float_case<double>(LOOM_FLOAT64, "float64"))),
               cmocka_unit_test(test_finish_average), cmocka_unit_test(test_invalid_pairs),
               cmocka_unit_test(test_min_max_ieee), cmocka_unit_test(test_copy_bytes))
