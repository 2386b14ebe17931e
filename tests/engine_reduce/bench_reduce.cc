// SPDX-License-Identifier: Apache-2.0
// Micro-benchmark of the reduction kernels (a program that prints figures, not a test):
// GB/s of float32 sum, float16/bfloat16 sum and int32 max, next to memcpy measured by the
// same program, on 64 MiB buffers (memory-bound) and 256 KiB buffers (cache-resident, the
// size of an engine pipeline chunk).
//
// Bandwidth counts every byte the operation touches: memcpy reads n and writes n (2n);
// out-of-place dst = a op b reads 2n and writes n (3n); in place (dst == a) also 3n.
// Each figure is the best of `reps` runs after one warm-up run.
//
// Usage: bench_reduce [MiB] [reps]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/reduce.hh"

namespace {

using clock_type = std::chrono::steady_clock;

template <class F>
double best_seconds(int reps, F&& f) {
    f();  // warm-up: page faults, caches, ifunc resolution
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = clock_type::now();
        f();
        const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
        best           = s < best ? s : best;
    }
    return best;
}

struct buffers {
    std::vector<unsigned char> a, b, d;
    explicit buffers(size_t bytes) : a(bytes), b(bytes), d(bytes) {
        for (size_t i = 0; i < bytes; ++i) {  // small, non-special values in every dtype
            a[i] = static_cast<unsigned char>(i * 7 % 61);
            b[i] = static_cast<unsigned char>(i * 13 % 59);
        }
    }
};

void row(const char* what, double bytes_touched, double seconds, double memcpy_gbs) {
    const double gbs = bytes_touched / seconds / 1e9;
    std::printf("  %-28s %8.2f GB/s  %6.2fx memcpy  (%.3f ms)\n", what, gbs, gbs / memcpy_gbs,
                seconds * 1e3);
}

void run_size(size_t bytes, int reps) {
    buffers buf(bytes);
    std::printf("buffers of %zu KiB, best of %d:\n", bytes / 1024, reps);
    const double t_copy =
        best_seconds(reps, [&] { std::memcpy(buf.d.data(), buf.a.data(), bytes); });
    const double memcpy_gbs = 2.0 * double(bytes) / t_copy / 1e9;
    row("memcpy (2n bytes)", 2.0 * double(bytes), t_copy, memcpy_gbs);

    struct kernel_case {
        const char* name;
        loom_dtype_t dtype;
        loom_op_t op;
        size_t elem;
        bool in_place;
    };
    const kernel_case cases[] = {
        {"float32 sum", LOOM_FLOAT32, LOOM_SUM, 4, false},
        {"float32 sum in place", LOOM_FLOAT32, LOOM_SUM, 4, true},
        {"bfloat16 sum", LOOM_BFLOAT16, LOOM_SUM, 2, false},
        {"bfloat16 sum in place", LOOM_BFLOAT16, LOOM_SUM, 2, true},
        {"float16 sum", LOOM_FLOAT16, LOOM_SUM, 2, false},
        {"int32 max", LOOM_INT32, LOOM_MAX, 4, false},
        {"int8 sum", LOOM_INT8, LOOM_SUM, 1, false},
        {"float64 min", LOOM_FLOAT64, LOOM_MIN, 8, false},
    };
    for (const kernel_case& c : cases) {
        const loom::kernels::reduce_fn k = loom::kernels::reduce_kernel(c.dtype, c.op);
        const size_t count               = bytes / c.elem;
        void* dst                        = buf.d.data();
        const void* a                    = c.in_place ? dst : buf.a.data();
        if (c.in_place) {
            std::memcpy(dst, buf.a.data(), bytes);
        }
        const double t = best_seconds(reps, [&] { k(dst, a, buf.b.data(), count); });
        row(c.name, 3.0 * double(bytes), t, memcpy_gbs);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
    const int reps   = argc > 2 ? std::atoi(argv[2]) : 5;
    if (mib == 0 || reps <= 0) {
        std::fprintf(stderr, "usage: bench_reduce [MiB > 0] [reps > 0]\n");
        return 2;
    }
    run_size(mib << 20, reps);
    // Many repetitions of a cache-resident buffer, so the clock resolution does not matter.
    run_size(256 << 10, reps * 200);
    return 0;
}
