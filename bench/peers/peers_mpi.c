// SPDX-License-Identifier: Apache-2.0
// peers_mpi: times MPI collectives the way loom-bench --timing barrier times loom's, for a
// side-by-side table.
//
// Usage: mpirun -np N peers_mpi LIBRARY COLLECTIVE SIZE:ITERS:WARMUP[:BUDGET_S]...
// LIBRARY only labels the CSV rows (openmpi, mpich, ...); the same source is compiled once
// per MPI. COLLECTIVE is allreduce, allgather, reduce_scatter, alltoall or broadcast. Sizes
// follow nccl-tests: the bytes of the per-rank buffer (allreduce, broadcast: the vector;
// allgather: the full output; reduce_scatter: the full input; alltoall: the full send
// buffer), in float32 elements. Per size: WARMUP untimed calls (each after a barrier; with
// BUDGET_S, fewer when they would pass a quarter of it, and their time cuts ITERS to what
// fits in BUDGET_S seconds, at least 5), then ITERS times
// { barrier; enter = now; call; leave = now }; an allreduce of max over the enter and leave
// arrays gives, per iteration, the last rank entering and the last rank leaving (one host,
// one CLOCK_MONOTONIC), and the iteration's time is their difference. Rank 0 prints
// `library,collective,nranks,bytes,p50_us,p99_us,mean_us`.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

// One call of `coll` on `bytes` bytes (float32 elements) from `in` to `out`.
static int call_once(const char* coll, float* in, float* out, size_t bytes, int n) {
    int count = (int)(bytes / sizeof(float)), piece = count / n;
    if (strcmp(coll, "allreduce") == 0) {
        return MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    if (strcmp(coll, "allgather") == 0) {
        return MPI_Allgather(in, piece, MPI_FLOAT, out, piece, MPI_FLOAT, MPI_COMM_WORLD);
    }
    if (strcmp(coll, "reduce_scatter") == 0) {
        return MPI_Reduce_scatter_block(in, out, piece, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    if (strcmp(coll, "alltoall") == 0) {
        return MPI_Alltoall(in, piece, MPI_FLOAT, out, piece, MPI_FLOAT, MPI_COMM_WORLD);
    }
    return MPI_Bcast(in, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
}

// `calls` warm-up calls, each after a barrier; their time, the maximum over ranks.
static double warm_up(const char* coll, float* in, float* out, size_t bytes, int n, int calls) {
    double t0 = now_s(), mine = 0, slowest = 0;
    for (int i = 0; i < calls; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        call_once(coll, in, out, bytes, n);
    }
    mine = now_s() - t0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, n = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 4) {
        if (rank == 0) {
            fprintf(stderr,
                    "usage: peers_mpi LIBRARY COLLECTIVE SIZE:ITERS:WARMUP[:BUDGET_S]...\n");
        }
        MPI_Finalize();
        return 2;
    }
    const char* lib  = argv[1];
    const char* coll = argv[2];
    size_t max_bytes = 0;
    for (int a = 3; a < argc; ++a) {
        size_t b  = strtoull(argv[a], NULL, 10);
        max_bytes = b > max_bytes ? b : max_bytes;
    }
    size_t alloc = max_bytes < 64 ? 64 : max_bytes;
    float* in    = aligned_alloc(4096, (alloc + 4095) / 4096 * 4096);
    float* out   = aligned_alloc(4096, (alloc + 4095) / 4096 * 4096);
    if (in == NULL || out == NULL) {
        fprintf(stderr, "peers_mpi: cannot allocate 2 x %zu bytes\n", alloc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < alloc / sizeof(float); ++i) {
        in[i]  = (float)(1 + (i + (size_t)rank) % 16);
        out[i] = 0;
    }
    /* Settle as loom-bench does: 1000 barriers before the first size, so the kernel has
     * spread the ranks over the cores before anything is timed. */
    for (int i = 0; i < 1000; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int a = 3; a < argc; ++a) {
        size_t bytes = 0;
        int iters = 0, warmup = 0;
        double budget = 0;
        if (sscanf(argv[a], "%zu:%d:%d:%lf", &bytes, &iters, &warmup, &budget) < 3 || iters < 1) {
            if (rank == 0) {
                fprintf(stderr, "peers_mpi: bad size spec '%s'\n", argv[a]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        // Warm-up calls cut to a quarter of the budget; their time per call cuts ITERS to it.
        double first    = warm_up(coll, in, out, bytes, n, warmup > 0 ? 1 : 0);
        int more        = more_warmups(warmup, budget, first);
        double per_call = more > 0 ? warm_up(coll, in, out, bytes, n, more) / more : first;
        int fit         = iters_in_budget(iters, budget, per_call);
        if (rank == 0 && fit < iters) {
            fprintf(stderr, "%s %s N=%d %zu B: %d of %d iterations (budget %.1f s)\n", lib, coll, n,
                    bytes, fit, iters, budget);
        }
        iters             = fit;
        double* enter     = malloc(sizeof(double) * (size_t)iters * 4);
        double* leave     = enter + iters;
        double* max_enter = leave + iters;
        double* max_leave = max_enter + iters;
        for (int i = 0; i < iters; ++i) {
            MPI_Barrier(MPI_COMM_WORLD);
            enter[i] = now_s();
            call_once(coll, in, out, bytes, n);
            leave[i] = now_s();
        }
        MPI_Allreduce(enter, max_enter, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(leave, max_leave, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0) {
            for (int i = 0; i < iters; ++i) {
                max_leave[i] = (max_leave[i] - max_enter[i]) * 1e6;
            }
            double p50, p99, mean;
            summarize(max_leave, (size_t)iters, &p50, &p99, &mean);
            printf("%s,%s,%d,%zu,%.2f,%.2f,%.2f\n", lib, coll, n, bytes, p50, p99, mean);
            fflush(stdout);
        }
        free(enter);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
