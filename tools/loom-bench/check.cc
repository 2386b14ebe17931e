// Inputs and -c: every rank's input is a pattern of small integers, exact in every type, so
// every result can be predicted exactly and compared element by element (nccl-tests checks
// against a tolerance; loom's reductions of small integers leave no rounding to tolerate).
#include <algorithm>

#include "bench.hh"

namespace loom::bench {
namespace {

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
