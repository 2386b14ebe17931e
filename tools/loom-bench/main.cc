// loom-bench: how fast loom's collectives run here, printed as nccl-tests prints it.
//
// Each rank is one process under loomrun; the communicator comes from the environment
// (loom_comm_create(NULL)). For every size: fill the inputs (and, with -c, poison the
// outputs), warm up, barrier, time ITERS calls; the time is the mean per call, the maximum
// over ranks (an allreduce of max). Rank 0 prints one row per size. Buffers are allocated
// once for the largest size, so the timed loop allocates nothing. Before the table, rank 0
// prints this machine's memcpy bandwidth, the ceiling the figures sit under.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "bench.hh"

namespace loom::bench {
namespace {

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct free_deleter {
    void operator()(void* p) const { std::free(p); }
};
using buffer = std::unique_ptr<void, free_deleter>;

// Page-aligned and touched, so the first timed call takes no page faults.
buffer allocate(size_t bytes) {
    size_t rounded = (std::max<size_t>(bytes, 64) + 4095) / 4096 * 4096;
    buffer b(std::aligned_alloc(4096, rounded));
    if (b) {
        std::memset(b.get(), 0, rounded);
    }
    return b;
}

constexpr size_t memcpy_bytes = 64u << 20;
constexpr int memcpy_reps     = 10;

// Best of memcpy_reps copies of 64 MiB, in GB/s (bytes copied, not bytes moved: a copy
// reads and writes each byte). 0 when the buffers cannot be had.
double memcpy_gbps() {
    buffer src = allocate(memcpy_bytes), dst = allocate(memcpy_bytes);
    if (!src || !dst) {
        return 0;
    }
    std::memset(src.get(), 0x5a, memcpy_bytes);
    volatile unsigned char sink = 0;
    double best                 = 1e30;
    for (int rep = 0; rep <= memcpy_reps; ++rep) {  // rep 0 warms up
        static_cast<unsigned char*>(src.get())[rep] = static_cast<unsigned char>(rep);
        double t0                                   = now_s();
        std::memcpy(dst.get(), src.get(), memcpy_bytes);
        double t = now_s() - t0;
        sink     = sink + static_cast<unsigned char*>(dst.get())[rep];
        if (rep > 0) {
            best = std::min(best, t);
        }
    }
    return static_cast<double>(memcpy_bytes) / best / 1e9;
}

// Whether this process will be rank 0 (from LOOM_RANK, set by loomrun), known before the
// communicator exists: rank 0 measures memcpy while the others wait for the rendezvous
// (asleep), not while they poll in a barrier on the same cores.
bool likely_rank0() {
    const char* r = std::getenv("LOOM_RANK");
    return r == nullptr || std::strcmp(r, "0") == 0;
}

// Blocks of a vector of `total` elements over n ranks, as loom cuts them (loom.h).
struct block {
    uint64_t offset, length;
};
block block_of(uint64_t total, int n, int r) {
    uint64_t base = total / static_cast<uint64_t>(n), extra = total % static_cast<uint64_t>(n);
    uint64_t ur = static_cast<uint64_t>(r);
    return {ur * base + std::min(ur, extra), base + (ur < extra ? 1 : 0)};
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

struct bench_state {
    options o;
    loom_comm_t comm = nullptr;
    int rank = 0, n = 1;
    loom_coll_attr_t attr{};
    const loom_coll_attr_t* attr_ptr = nullptr;
    size_t elem                      = 4;
    buffer send, recv;
    loom_op_t pattern_op = LOOM_SUM;  // the op whose input pattern fills the buffers
};

// One size: `count` is what the call takes (alltoall: per peer), `total` the elements of
// the whole vector (the size column).
struct shape {
    uint64_t count, total;
};

shape shape_for(const bench_state& s, uint64_t bytes) {
    uint64_t elems = bytes / s.elem, n = static_cast<uint64_t>(s.n);
    switch (s.o.coll) {
        case LOOM_REDUCE_SCATTER:
        case LOOM_ALLGATHER:
            return {elems / n * n, elems / n * n};
        case LOOM_ALLTOALL:
            return {elems / n, elems / n * n};
        default:
            return {elems, elems};
    }
}

loom_status_t call_once(const bench_state& s, const shape& sh) {
    void* in  = s.send.get();
    void* out = s.recv.get();
    switch (s.o.coll) {
        case LOOM_BROADCAST:
            return loom_broadcast(s.comm, in, out, sh.count, s.o.dtype, s.o.root, s.attr_ptr,
                                  nullptr);
        case LOOM_REDUCE:
            return loom_reduce(s.comm, in, out, sh.count, s.o.dtype, s.o.op, s.o.root, s.attr_ptr,
                               nullptr);
        case LOOM_REDUCE_SCATTER:
            return loom_reduce_scatter(s.comm, in, out, sh.count, s.o.dtype, s.o.op, s.attr_ptr,
                                       nullptr);
        case LOOM_ALLGATHER:
            return loom_allgather(s.comm, in, out, sh.count, s.o.dtype, s.attr_ptr, nullptr);
        case LOOM_ALLTOALL:
            return loom_alltoall(s.comm, in, out, sh.count, s.o.dtype, s.attr_ptr, nullptr);
        default:
            return loom_allreduce(s.comm, in, out, sh.count, s.o.dtype, s.o.op, s.attr_ptr,
                                  nullptr);
    }
}

template <class T>
void fill_typed(const bench_state& s, const shape& sh) {
    T* in = static_cast<T*>(s.send.get());
    if (s.o.coll == LOOM_ALLGATHER) {
        block b = block_of(sh.total, s.n, s.rank);
        for (uint64_t k = 0; k < b.length; ++k) {
            in[k] = static_cast<T>(pattern(s.pattern_op, s.rank, b.offset + k));
        }
        return;
    }
    for (uint64_t i = 0; i < sh.total; ++i) {
        in[i] = static_cast<T>(pattern(s.pattern_op, s.rank, i));
    }
}

// Elements of this rank's output that differ from the exact expectation.
template <class T>
uint64_t count_wrong_typed(const bench_state& s, const shape& sh) {
    const T* out   = static_cast<const T*>(s.recv.get());
    uint64_t wrong = 0;
    auto expect    = [&](uint64_t at, T want) { wrong += out[at] == want ? 0 : 1; };
    switch (s.o.coll) {
        case LOOM_BROADCAST:
            for (uint64_t i = 0; i < sh.total; ++i) {
                expect(i, static_cast<T>(pattern(s.pattern_op, s.o.root, i)));
            }
            break;
        case LOOM_REDUCE:
            if (s.rank == s.o.root) {
                for (uint64_t i = 0; i < sh.total; ++i) {
                    expect(i, reduced<T>(s.o.op, s.n, i));
                }
            }
            break;
        case LOOM_REDUCE_SCATTER: {
            block b = block_of(sh.total, s.n, s.rank);
            for (uint64_t k = 0; k < b.length; ++k) {
                expect(k, reduced<T>(s.o.op, s.n, b.offset + k));
            }
            break;
        }
        case LOOM_ALLGATHER:
            for (int r = 0; r < s.n; ++r) {
                block b = block_of(sh.total, s.n, r);
                for (uint64_t k = 0; k < b.length; ++k) {
                    expect(b.offset + k, static_cast<T>(pattern(s.pattern_op, r, b.offset + k)));
                }
            }
            break;
        case LOOM_ALLTOALL:
            for (int j = 0; j < s.n; ++j) {
                uint64_t from = static_cast<uint64_t>(j) * sh.count;
                uint64_t mine = static_cast<uint64_t>(s.rank) * sh.count;
                for (uint64_t k = 0; k < sh.count; ++k) {
                    expect(from + k, static_cast<T>(pattern(s.pattern_op, j, mine + k)));
                }
            }
            break;
        default:
            for (uint64_t i = 0; i < sh.total; ++i) {
                expect(i, reduced<T>(s.o.op, s.n, i));
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
    static int run(const bench_state& s, const shape& sh) {
        fill_typed<T>(s, sh);
        return 0;
    }
};
template <class T>
struct check_fn {
    static uint64_t run(const bench_state& s, const shape& sh) {
        return count_wrong_typed<T>(s, sh);
    }
};

double busbw_factor(loom_collective_t c, int n) {
    double dn = n;
    switch (c) {
        case LOOM_ALLREDUCE:
            return 2 * (dn - 1) / dn;
        case LOOM_REDUCE_SCATTER:
        case LOOM_ALLGATHER:
        case LOOM_ALLTOALL:
            return (dn - 1) / dn;
        default:
            return 1;
    }
}

// The algorithm a call of this size runs: --algo, else LOOM_ALGO's entry, else loom's
// default rule as loom.h states it (the C API does not report the choice).
std::string algorithm_for(const bench_state& s, const shape& sh) {
    if (!s.o.algo.empty()) {
        return s.o.algo;
    }
    if (const char* env = std::getenv("LOOM_ALGO"); env != nullptr && *env != '\0') {
        std::string_view spec = env, prim = collective_name(s.o.coll);
        while (!spec.empty()) {
            size_t end             = spec.find(';');
            std::string_view entry = spec.substr(0, end);
            if (entry.size() > prim.size() && entry.substr(0, prim.size()) == prim &&
                entry[prim.size()] == '=') {
                return std::string(entry.substr(prim.size() + 1));
            }
            spec = end == std::string_view::npos ? std::string_view() : spec.substr(end + 1);
        }
    }
    switch (s.o.coll) {
        case LOOM_BROADCAST:
        case LOOM_REDUCE:
            return "binomial";
        case LOOM_ALLREDUCE:
            return sh.total * s.elem < 64 * 1024 ? "recursive-doubling" : "ring";
        case LOOM_ALLTOALL:
            return "pairwise";
        default:
            return "ring";
    }
}

std::string algorithm_origin(const bench_state& s) {
    if (!s.o.algo.empty()) {
        return "--algo " + s.o.algo;
    }
    const char* env = std::getenv("LOOM_ALGO");
    if (env != nullptr && *env != '\0') {
        return std::string("LOOM_ALGO=") + env + " (per row)";
    }
    if (s.o.coll == LOOM_ALLREDUCE) {
        return "default rule: recursive-doubling below 64 KiB, ring from 64 KiB (per row)";
    }
    return "default rule (per row)";
}

// loom's message already names the rank, the collective and the reason.
int call_failed(loom_status_t st) {
    std::fflush(stdout);
    std::fprintf(stderr, "loom-bench: %s\n", loom_last_error_message());
    bool bad_args = st == LOOM_ERR_INVALID_ARGUMENT || st == LOOM_ERR_NOT_APPLICABLE;
    return bad_args ? exit_bad_args : exit_failed;
}

void print_header(const bench_state& s, double memcpy) {
    const char* transport = std::getenv("LOOM_TRANSPORT");
    std::string how       = transport != nullptr && *transport != '\0'
                                ? std::string(transport) + " (LOOM_TRANSPORT)"
                            : s.n == 1 ? std::string("self (default for one rank)")
                                       : std::string("shm (default)");
    std::printf("# loom-bench %s, loom %s: N = %d ranks, transport %s\n", collective_name(s.o.coll),
                loom_version(), s.n, how.c_str());
    std::printf("# algorithm: %s\n", algorithm_origin(s).c_str());
    std::printf("# sizes %llu..%llu B, factor %llu; warm-up %d, iters %d; check %s; dtype %s",
                static_cast<unsigned long long>(s.o.min_bytes),
                static_cast<unsigned long long>(s.o.max_bytes),
                static_cast<unsigned long long>(s.o.factor), s.o.warmup, s.o.iters,
                s.o.check ? "on" : "off", dtype_name(s.o.dtype));
    if (reduces(s.o.coll)) {
        std::printf(", op %s", op_name(s.o.op));
    }
    if (rooted(s.o.coll)) {
        std::printf(", root %d", s.o.root);
    }
    std::printf("\n");
    if (memcpy > 0) {
        std::printf("# memcpy bandwidth (rank 0, %zu MiB, best of %d): %.2f GB/s\n",
                    memcpy_bytes >> 20, memcpy_reps, memcpy);
    } else {
        std::printf("# memcpy bandwidth: not measured\n");
    }
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %s\n", "size", "count", "type",
                "redop", "root", "time", "algbw", "busbw", "#wrong", "algorithm");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s\n", "(B)", "(elements)", "", "", "",
                "(us)", "(GB/s)", "(GB/s)");
    std::fflush(stdout);
}

int run(const options& o) {
    double memcpy = likely_rank0() ? memcpy_gbps() : 0;
    bench_state s;
    s.o = o;
    if (loom_status_t st = loom_comm_create(nullptr, &s.comm); st != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-bench: loom_comm_create: %s\n", loom_last_error_message());
        return st == LOOM_ERR_INVALID_ARGUMENT ? exit_bad_args : exit_failed;
    }
    s.rank = loom_comm_rank(s.comm);
    s.n    = loom_comm_size(s.comm);
    s.elem = loom_dtype_size(o.dtype);
    if (rooted(o.coll) && o.root >= s.n) {
        if (s.rank == 0) {
            std::fprintf(stderr, "loom-bench: -r %d: the root must be in 0..%d\n", o.root, s.n - 1);
        }
        loom_comm_destroy(s.comm);
        return exit_bad_args;
    }
    if (!o.algo.empty()) {
        loom_coll_attr_init(&s.attr);
        s.attr.algorithm = s.o.algo.c_str();
        s.attr_ptr       = &s.attr;
    }
    s.pattern_op        = reduces(o.coll) ? o.op : LOOM_SUM;
    size_t buffer_bytes = static_cast<size_t>(o.max_bytes / s.elem * s.elem);
    s.send              = allocate(buffer_bytes);
    s.recv              = allocate(buffer_bytes);
    if (!s.send || !s.recv) {
        std::fprintf(stderr, "loom-bench: rank %d: cannot allocate 2 x %zu bytes\n", s.rank,
                     buffer_bytes);
        loom_comm_abort(s.comm, "loom-bench: out of memory");
        loom_comm_destroy(s.comm);
        return exit_failed;
    }
    if (s.rank == 0) {
        print_header(s, memcpy);
    }

    int code             = exit_ok;
    uint64_t total_wrong = 0;
    double busbw_sum     = 0;
    int rows             = 0;
    for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes && code == exit_ok; bytes *= o.factor) {
        shape sh = shape_for(s, bytes);
        by_dtype<fill_fn>(o.dtype, s, sh);
        if (o.check) {
            std::memset(s.recv.get(), 0xa5, buffer_bytes);  // a result not written shows
        }
        loom_status_t st = LOOM_SUCCESS;
        for (int i = 0; i < o.warmup && st == LOOM_SUCCESS; ++i) {
            st = call_once(s, sh);
        }
        if (st == LOOM_SUCCESS) {
            st = loom_barrier(s.comm, nullptr, nullptr);
        }
        if (st != LOOM_SUCCESS) {
            code = call_failed(st);
            break;
        }
        // The timed loop: nothing but the calls.
        double t0 = now_s();
        for (int i = 0; i < o.iters && st == LOOM_SUCCESS; ++i) {
            st = call_once(s, sh);
        }
        double per_call = (now_s() - t0) / o.iters;
        if (st != LOOM_SUCCESS) {
            code = call_failed(st);
            break;
        }
        double slowest = 0;
        uint64_t wrong = o.check ? by_dtype<check_fn>(o.dtype, s, sh) : 0, wrong_all = 0;
        st = loom_allreduce(s.comm, &per_call, &slowest, 1, LOOM_FLOAT64, LOOM_MAX, nullptr,
                            nullptr);
        if (st == LOOM_SUCCESS) {
            st = loom_allreduce(s.comm, &wrong, &wrong_all, 1, LOOM_UINT64, LOOM_SUM, nullptr,
                                nullptr);
        }
        if (st != LOOM_SUCCESS) {
            code = call_failed(st);
            break;
        }
        total_wrong += wrong_all;
        double size_b = static_cast<double>(sh.total * s.elem);
        double algbw  = slowest > 0 ? size_b / slowest / 1e9 : 0;
        double busbw  = algbw * busbw_factor(o.coll, s.n);
        busbw_sum += busbw;
        ++rows;
        if (s.rank == 0) {
            std::string wrong_text =
                o.check ? std::to_string(static_cast<unsigned long long>(wrong_all)) : "N/A";
            std::string root_text = rooted(o.coll) ? std::to_string(o.root) : "-1";
            std::printf("  %10llu  %12llu  %8s  %6s  %6s  %9.2f  %7.3f  %7.3f  %6s  %s\n",
                        static_cast<unsigned long long>(sh.total * s.elem),
                        static_cast<unsigned long long>(sh.total), dtype_name(o.dtype),
                        reduces(o.coll) ? op_name(o.op) : "none", root_text.c_str(), slowest * 1e6,
                        algbw, busbw, wrong_text.c_str(), algorithm_for(s, sh).c_str());
            std::fflush(stdout);
        }
        if (o.max_bytes / o.factor < bytes) {
            break;  // the next size would pass -e (or overflow)
        }
    }
    if (code == exit_ok && s.rank == 0) {
        std::printf("# Out of bounds values : %llu %s\n",
                    static_cast<unsigned long long>(total_wrong),
                    !o.check           ? "(not checked)"
                    : total_wrong == 0 ? "OK"
                                       : "FAILED");
        std::printf("# Avg bus bandwidth    : %.3f GB/s\n", rows ? busbw_sum / rows : 0.0);
        std::fflush(stdout);
    }
    if (code == exit_ok && total_wrong > 0) {
        code = exit_failed;
    }
    if (code != exit_ok) {
        loom_comm_abort(s.comm, "loom-bench: a call failed");
    }
    loom_comm_destroy(s.comm);
    return code;
}

}  // namespace
}  // namespace loom::bench

int main(int argc, char** argv) {
    using namespace loom::bench;
    options o;
    std::string error;
    switch (parse_options(argc, argv, &o, &error)) {
        case parse_outcome::help:
            std::fputs(usage_text(), stdout);
            return exit_ok;
        case parse_outcome::fail:
            std::fprintf(stderr, "loom-bench: %s\n", error.c_str());
            return exit_bad_args;
        case parse_outcome::run:
            break;
    }
    return run(o);
}
