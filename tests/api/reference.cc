// SPDX-License-Identifier: Apache-2.0
#include "reference.hh"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/hash.hh"
#include "kernels/reduce.hh"

namespace loom::test::api {
namespace {

uint64_t draw(uint64_t seed, int rank, size_t i) {
    return splitmix64(seed ^ splitmix64(static_cast<uint64_t>(rank) * 0x100000001b3ull + i));
}

bool is_float(loom_dtype_t d) {
    return d == LOOM_FLOAT16 || d == LOOM_BFLOAT16 || d == LOOM_FLOAT32 || d == LOOM_FLOAT64;
}

bool is_signed(loom_dtype_t d) {
    return d == LOOM_INT8 || d == LOOM_INT32 || d == LOOM_INT64;
}

double unit_roundoff(loom_dtype_t d) {
    switch (d) {
        case LOOM_FLOAT16:
            return std::ldexp(1.0, -11);
        case LOOM_BFLOAT16:
            return std::ldexp(1.0, -8);
        case LOOM_FLOAT32:
            return std::ldexp(1.0, -24);
        default:
            return std::ldexp(1.0, -53);
    }
}

// The value a rank contributes at index i, before it is stored in the dtype.
double float_value(loom_op_t op, uint64_t h) {
    if (op == LOOM_SUM || op == LOOM_AVG) {
        return static_cast<double>(h >> 11) * std::ldexp(1.0, -52) - 1.0;  // [-1, 1)
    }
    if (op == LOOM_PROD) {
        static const double choices[] = {-2, -1, 1, 2};
        return choices[h % 4];
    }
    return static_cast<double>(static_cast<int64_t>(h % 201) - 100);  // min, max
}

int64_t int_value(loom_dtype_t d, loom_op_t op, uint64_t h) {
    bool s = is_signed(d);
    switch (op) {
        case LOOM_PROD: {
            static const int64_t sv[] = {-2, -1, 1, 2, 3}, uv[] = {1, 2, 3};
            return s ? sv[h % 5] : uv[h % 3];
        }
        case LOOM_MIN:
        case LOOM_MAX:
            return s ? static_cast<int64_t>(h % 201) - 100 : static_cast<int64_t>(h % 201);
        default:
            return s ? static_cast<int64_t>(h % 101) - 50 : static_cast<int64_t>(h % 101);
    }
}

double load_float(loom_dtype_t d, const void* buf, size_t i) {
    const auto* b = static_cast<const uint8_t*>(buf);
    uint16_t h;
    float f;
    double x;
    switch (d) {
        case LOOM_FLOAT16:
        case LOOM_BFLOAT16:
            std::memcpy(&h, b + 2 * i, 2);
            return d == LOOM_FLOAT16 ? kernels::half_to_float(h) : kernels::bfloat16_to_float(h);
        case LOOM_FLOAT32:
            std::memcpy(&f, b + 4 * i, 4);
            return f;
        default:
            std::memcpy(&x, b + 8 * i, 8);
            return x;
    }
}

// The raw bits of element i, zero-extended.
uint64_t load_bits(loom_dtype_t d, const void* buf, size_t i) {
    uint64_t v  = 0;
    size_t size = loom_dtype_size(d);
    std::memcpy(&v, static_cast<const uint8_t*>(buf) + size * i, size);
    return v;
}

int64_t as_signed(uint64_t bits, int width) {
    if (width == 64) {
        return static_cast<int64_t>(bits);
    }
    uint64_t sign = uint64_t{1} << (width - 1);
    return static_cast<int64_t>((bits ^ sign) - sign);
}

// Reference for one integer element: wrapping arithmetic in the element's width.
uint64_t int_reference(loom_dtype_t d, loom_op_t op, uint64_t seed, int nranks, size_t i) {
    int width     = static_cast<int>(8 * loom_dtype_size(d));
    uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    bool s        = is_signed(d);
    uint64_t acc  = 0;
    for (int r = 0; r < nranks; ++r) {
        uint64_t v = static_cast<uint64_t>(int_value(d, op, draw(seed, r, i))) & mask;
        if (r == 0) {
            acc = v;
            continue;
        }
        bool less = s ? as_signed(v, width) < as_signed(acc, width) : v < acc;
        switch (op) {
            case LOOM_SUM:
            case LOOM_AVG:
                acc = (acc + v) & mask;
                break;
            case LOOM_PROD:
                acc = (acc * v) & mask;
                break;
            case LOOM_MIN:
                acc = less ? v : acc;
                break;
            case LOOM_MAX:
                acc = (!less && v != acc) ? v : acc;
                break;
            default:
                break;
        }
    }
    if (op == LOOM_AVG) {
        acc = s ? static_cast<uint64_t>(as_signed(acc, width) / nranks) & mask : acc / nranks;
    }
    return acc;
}

std::string mismatch(size_t index, const std::string& got, const std::string& want) {
    return "element " + std::to_string(index) + ": got " + got + ", expected " + want;
}

std::string check_float(loom_dtype_t d, loom_op_t op, uint64_t seed, int nranks, const void* got,
                        size_t first, size_t n) {
    double u = unit_roundoff(d);
    for (size_t k = 0; k < n; ++k) {
        size_t i        = first + k;
        long double acc = 0, magnitude = 0;
        for (int r = 0; r < nranks; ++r) {
            // The value as stored in the dtype (the input the rank really passed).
            uint8_t one[8];
            store_element(d, one, 0, float_value(op, draw(seed, r, i)), 0);
            long double v = load_float(d, one, 0);
            magnitude += std::fabs(v);
            if (r == 0) {
                acc = v;
            } else if (op == LOOM_SUM || op == LOOM_AVG) {
                acc += v;
            } else if (op == LOOM_PROD) {
                acc *= v;
            } else if (op == LOOM_MIN) {
                acc = v < acc ? v : acc;
            } else {
                acc = v > acc ? v : acc;
            }
        }
        if (op == LOOM_AVG) {
            acc /= nranks;
        }
        double g     = load_float(d, got, k);
        bool summed  = op == LOOM_SUM || op == LOOM_AVG;
        double bound = summed ? nranks * u * static_cast<double>(magnitude) +
                                    u * std::fabs(static_cast<double>(acc))
                              : 0.0;
        if (!(std::fabs(g - static_cast<double>(acc)) <= bound)) {
            return mismatch(i, std::to_string(g),
                            std::to_string(static_cast<double>(acc)) + " (bound " +
                                std::to_string(bound) + ")");
        }
    }
    return "";
}

}  // namespace

void store_element(loom_dtype_t d, void* buf, size_t i, double f, int64_t v) {
    auto* b     = static_cast<uint8_t*>(buf);
    size_t size = loom_dtype_size(d);
    switch (d) {
        case LOOM_FLOAT16:
        case LOOM_BFLOAT16: {
            auto x = static_cast<float>(f);
            uint16_t h =
                d == LOOM_FLOAT16 ? kernels::float_to_half(x) : kernels::float_to_bfloat16(x);
            std::memcpy(b + size * i, &h, 2);
            return;
        }
        case LOOM_FLOAT32: {
            auto x = static_cast<float>(f);
            std::memcpy(b + size * i, &x, 4);
            return;
        }
        case LOOM_FLOAT64:
            std::memcpy(b + size * i, &f, 8);
            return;
        default:
            std::memcpy(b + size * i, &v, size);
            return;  // little-endian low bytes
    }
}

void fill_reduction_input(loom_dtype_t d, loom_op_t op, uint64_t seed, int rank, void* buf,
                          size_t first, size_t n) {
    for (size_t k = 0; k < n; ++k) {
        uint64_t h = draw(seed, rank, first + k);
        store_element(d, buf, k, is_float(d) ? float_value(op, h) : 0.0, int_value(d, op, h));
    }
}

std::string check_reduction(loom_dtype_t d, loom_op_t op, uint64_t seed, int nranks,
                            const void* got, size_t first, size_t n) {
    if (is_float(d)) {
        return check_float(d, op, seed, nranks, got, first, n);
    }
    for (size_t k = 0; k < n; ++k) {
        uint64_t want = int_reference(d, op, seed, nranks, first + k);
        uint64_t have = load_bits(d, got, k);
        if (want != have) {
            return mismatch(first + k, std::to_string(have), std::to_string(want));
        }
    }
    return "";
}

void fill_bytes(uint64_t seed, uint64_t who, void* buf, size_t bytes) {
    auto* b = static_cast<uint8_t*>(buf);
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t v = splitmix64(seed ^ splitmix64(who * golden_gamma + i));
        std::memcpy(b + i, &v, bytes - i < 8 ? bytes - i : 8);
    }
}

long first_difference(const void* a, const void* b, size_t bytes) {
    const auto* x  = static_cast<const uint8_t*>(a);
    const auto* at = std::mismatch(x, x + bytes, static_cast<const uint8_t*>(b)).first;
    return at == x + bytes ? -1 : at - x;
}

}  // namespace loom::test::api
