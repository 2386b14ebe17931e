// SPDX-License-Identifier: Apache-2.0
// Inputs and -c: every rank's input is a pattern of small integers, exact in every type, so
// every result can be predicted exactly and compared element by element (nccl-tests checks
// against a tolerance; loom's reductions of small integers leave no rounding to tolerate).
#include <algorithm>
#include <cstring>

#include "bench.hh"

namespace loom::bench {
namespace {

// half and bfloat16 as loom stores them: 16 bits, converted through float with one rounding
// to nearest even, as loom's kernels do after every operation. The patterns' sums stay exact
// (integers up to 2048 in half, 256 in bfloat16); avg divides in float, then rounds, as loom.
uint32_t bits_of(float f) {
    uint32_t x = 0;
    std::memcpy(&x, &f, sizeof x);
    return x;
}

float float_of(uint32_t x) {
    float f = 0;
    std::memcpy(&f, &x, sizeof f);
    return f;
}

// Normal numbers and zero are all the patterns produce; past the range is infinity.
uint16_t half_from(float f) {
    uint32_t x    = bits_of(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    int exponent  = static_cast<int>((x >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0 || exponent <= 0) {
        return static_cast<uint16_t>(sign);
    }
    if (exponent >= 31) {
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    uint32_t h    = sign | (static_cast<uint32_t>(exponent) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) {
        ++h;  // a carry into the exponent is the right rounding too
    }
    return static_cast<uint16_t>(h);
}

float half_to(uint16_t h) {
    uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t e    = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (e == 0) {
        float v = static_cast<float>(mant) * 0x1p-24f;
        return sign ? -v : v;
    }
    if (e == 31) {
        return float_of(sign | 0x7f800000u | (mant << 13));
    }
    return float_of(sign | ((e - 15 + 127) << 23) | (mant << 13));
}

uint16_t bfloat16_from(float f) {
    uint32_t x = bits_of(f);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bfloat16_to(uint16_t b) {
    return float_of(static_cast<uint32_t>(b) << 16);
}

template <uint16_t (*From)(float), float (*To)(uint16_t)>
struct float16_like {
    uint16_t bits  = 0;
    float16_like() = default;
    explicit float16_like(int64_t v) : bits(From(static_cast<float>(v))) {}
    static float16_like of(float f) {
        float16_like x;
        x.bits = From(f);
        return x;
    }
    float16_like operator/(float16_like d) const { return of(To(bits) / To(d.bits)); }
    bool operator==(const float16_like& o) const { return bits == o.bits; }
};
using half_t     = float16_like<half_from, half_to>;
using bfloat16_t = float16_like<bfloat16_from, bfloat16_to>;

// Blocks of a vector of `total` elements over n ranks, as loom cuts them (loom.h).
struct block {
    uint64_t offset, length;
};
block block_of(uint64_t total, int n, int r) {
    uint64_t base = total / static_cast<uint64_t>(n), extra = total % static_cast<uint64_t>(n);
    uint64_t ur = static_cast<uint64_t>(r);
    return {ur * base + std::min(ur, extra), base + (ur < extra ? 1 : 0)};
}

// The op whose input pattern fills the buffers: the primitive's own when it reduces.
loom_op_t pattern_op(const call_spec& c) {
    return reduces(c.coll) ? c.op : LOOM_SUM;
}

// The input of rank r at vector index i: a small integer, exact in every type. prod gets
// 1 or 2 so that the product of N inputs stays exact (2^N).
int64_t pattern(loom_op_t op, int r, uint64_t i) {
    if (op == LOOM_PROD) {
        return 1 + static_cast<int64_t>((i + static_cast<uint64_t>(r)) & 1);
    }
    return 1 + static_cast<int64_t>((i + 3 * static_cast<uint64_t>(r)) % 16);
}

// The exact reduction of every rank's input at index i, as loom computes it in type T
// (integer sums wrap; avg divides the sum by N, truncating for integers).
template <class T>
T reduced(loom_op_t op, int n, uint64_t i) {
    int64_t acc = pattern(op, 0, i);
    for (int r = 1; r < n; ++r) {
        int64_t v = pattern(op, r, i);
        switch (op) {
            case LOOM_PROD:
                acc *= v;
                break;
            case LOOM_MIN:
                acc = std::min(acc, v);
                break;
            case LOOM_MAX:
                acc = std::max(acc, v);
                break;
            default:
                acc += v;
        }
    }
    T value = static_cast<T>(acc);
    if (op == LOOM_AVG) {
        value = static_cast<T>(value / static_cast<T>(n));
    }
    return value;
}

template <class T>
void fill_typed(const call_spec& c, const shape& sh, const io& p) {
    T* in           = static_cast<T*>(p.in);
    loom_op_t op    = pattern_op(c);
    uint64_t first  = 0;  // the vector index of in[0]
    uint64_t length = sh.total;
    if (c.coll == LOOM_ALLGATHER) {
        block b = block_of(sh.total, c.n, c.rank);
        first   = b.offset;
        length  = b.length;
    } else if (c.coll == LOOM_SENDRECV) {
        length = sh.count;
    }
    for (uint64_t k = 0; k < length; ++k) {
        in[k] = static_cast<T>(pattern(op, c.rank, first + k));
    }
}

template <class T>
uint64_t count_wrong_typed(const call_spec& c, const shape& sh, const io& p) {
    const T* out   = static_cast<const T*>(p.out);
    loom_op_t op   = pattern_op(c);
    uint64_t wrong = 0;
    auto expect    = [&](uint64_t at, T want) { wrong += out[at] == want ? 0 : 1; };
    switch (c.coll) {
        case LOOM_BROADCAST:
            for (uint64_t i = 0; i < sh.total; ++i) {
                expect(i, static_cast<T>(pattern(op, c.root, i)));
            }
            break;
        case LOOM_REDUCE:
            if (c.rank == c.root) {
                for (uint64_t i = 0; i < sh.total; ++i) {
                    expect(i, reduced<T>(c.op, c.n, i));
                }
            }
            break;
        case LOOM_REDUCE_SCATTER: {
            block b = block_of(sh.total, c.n, c.rank);
            for (uint64_t k = 0; k < b.length; ++k) {
                expect(k, reduced<T>(c.op, c.n, b.offset + k));
            }
            break;
        }
        case LOOM_ALLGATHER:
            for (int r = 0; r < c.n; ++r) {
                block b = block_of(sh.total, c.n, r);
                for (uint64_t k = 0; k < b.length; ++k) {
                    expect(b.offset + k, static_cast<T>(pattern(op, r, b.offset + k)));
                }
            }
            break;
        case LOOM_ALLTOALL:
            for (int j = 0; j < c.n; ++j) {
                uint64_t from = static_cast<uint64_t>(j) * sh.count;
                uint64_t mine = static_cast<uint64_t>(c.rank) * sh.count;
                for (uint64_t k = 0; k < sh.count; ++k) {
                    expect(from + k, static_cast<T>(pattern(op, j, mine + k)));
                }
            }
            break;
        case LOOM_SENDRECV:
            for (uint64_t i = 0; i < sh.count; ++i) {
                expect(i, static_cast<T>(pattern(op, recv_peer(c), i)));
            }
            break;
        default:
            for (uint64_t i = 0; i < sh.total; ++i) {
                expect(i, reduced<T>(c.op, c.n, i));
            }
    }
    return wrong;
}

template <template <class> class F, class... A>
auto by_dtype(loom_dtype_t d, A&&... a) {
    switch (d) {
        case LOOM_INT8:
            return F<int8_t>::run(a...);
        case LOOM_UINT8:
            return F<uint8_t>::run(a...);
        case LOOM_INT32:
            return F<int32_t>::run(a...);
        case LOOM_UINT32:
            return F<uint32_t>::run(a...);
        case LOOM_INT64:
            return F<int64_t>::run(a...);
        case LOOM_UINT64:
            return F<uint64_t>::run(a...);
        case LOOM_FLOAT64:
            return F<double>::run(a...);
        case LOOM_FLOAT16:
            return F<half_t>::run(a...);
        case LOOM_BFLOAT16:
            return F<bfloat16_t>::run(a...);
        default:
            return F<float>::run(a...);
    }
}
template <class T>
struct fill_fn {
    static int run(const call_spec& c, const shape& sh, const io& p) {
        fill_typed<T>(c, sh, p);
        return 0;
    }
};
template <class T>
struct check_fn {
    static uint64_t run(const call_spec& c, const shape& sh, const io& p) {
        return count_wrong_typed<T>(c, sh, p);
    }
};

}  // namespace

void fill_inputs(const call_spec& c, const shape& sh, const io& p) {
    by_dtype<fill_fn>(c.dtype, c, sh, p);
}

uint64_t count_wrong(const call_spec& c, const shape& sh, const io& p) {
    return by_dtype<check_fn>(c.dtype, c, sh, p);
}

}  // namespace loom::bench
