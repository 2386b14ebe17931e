// SPDX-License-Identifier: Apache-2.0
/* The timing of the peers' programs (limits.c, peers_mpi.c, peers_gloo.cc): every library
 * is timed, summarised and cut to its budget the same way. */
#ifndef LOOM_BENCH_PEERS_TIMING_H
#define LOOM_BENCH_PEERS_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Sorts v and returns its median. */
static inline double median(double* v, size_t n) {
    qsort(v, n, sizeof(double), by_value);
    return (v[(n - 1) / 2] + v[n / 2]) / 2;
}

/* The CSV figures of one size: p50, p99 and the mean of us[0..n) (sorted here). */
static inline void summarize(double* us, size_t n, double* p50, double* p99, double* mean) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
        sum += us[i];
    }
    *p50  = median(us, n);
    *p99  = us[(size_t)((double)(n - 1) * 0.99 + 0.5)];
    *mean = sum / (double)n;
}

/* After the first warm-up call (it may set up connections, and took `first` s), as many of
 * the other WARMUP - 1 as fit in a quarter of BUDGET_S (0: no budget). */
static inline int more_warmups(int warmup, double budget, double first) {
    int more = warmup > 1 ? warmup - 1 : 0;
    if (budget > 0 && first > 0 && more > budget / 4 / first) {
        more = (int)(budget / 4 / first);
    }
    return more;
}

/* ITERS cut to what fits in BUDGET_S at `per_call` seconds a call, at least 5. */
static inline int iters_in_budget(int iters, double budget, double per_call) {
    if (budget > 0 && per_call > 0 && budget / per_call < iters) {
        int fit = budget / per_call < 5 ? 5 : (int)(budget / per_call);
        return fit < iters ? fit : iters;
    }
    return iters;
}

#endif
