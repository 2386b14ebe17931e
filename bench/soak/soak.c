// SPDX-License-Identifier: Apache-2.0
// Soak: many all-reduces on one communicator, watching for growth. A benchmark program
// (it prints figures; it asserts nothing but the results of the calls it makes).
//
// Runs `calls` all-reduces of `bytes` bytes (float32 sum; every result checked at element 0
// and at the last element), and reports for a window of calls at the start and at the end:
// the mean time per call, the resident set (VmRSS) and the open descriptors, each the
// maximum over ranks. Growth between the windows is what a leak, a descriptor left open or
// a slowing data structure would show.
//
//   loomrun -n 4 -- loom-soak --calls 1000000 --bytes 8
//   LOOM_ALGO=allreduce=inc loomrun -n 4 --switch -- loom-soak --calls 100000 --bytes 8
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <loom/loom.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rss_kib(void) {
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtod(line + 6, NULL);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib;
}

static double open_fds(void) {
    DIR* d = opendir("/proc/self/fd");
    int n  = 0;
    while (d != NULL && readdir(d) != NULL) {
        ++n;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n - 3;  // ".", ".." and the descriptor of the listing itself
}

struct window {
    double us_per_call, rss_kib, fds;
};

static int fail(loom_comm_t comm, const char* what, loom_status_t st) {
    fprintf(stderr, "loom-soak: rank %d: %s: %s: %s\n", loom_comm_rank(comm), what,
            loom_status_string(st), loom_last_error_message());
    return 1;
}

// Runs `calls` checked all-reduces; returns 0 and the window's figures (max over ranks).
static int run(loom_comm_t comm, long calls, float* in, float* out, size_t count, long* seq,
               struct window* w) {
    int rank = loom_comm_rank(comm), size = loom_comm_size(comm);
    double t0 = now_s();
    for (long i = 0; i < calls; ++i, ++*seq) {
        // Every rank adds (rank + 1) + seq % 1000: the expected sum changes every call, so a
        // stale or foreign result cannot pass.
        float v          = (float)(rank + 1) + (float)(*seq % 1000);
        in[0]            = v;
        in[count - 1]    = v;
        loom_status_t st = loom_allreduce(comm, in, out, count, LOOM_FLOAT32, LOOM_SUM, NULL, NULL);
        if (st != LOOM_SUCCESS) {
            return fail(comm, "allreduce", st);
        }
        float want = (float)(size * (size + 1) / 2) + (float)size * (float)(*seq % 1000);
        if (out[0] != want || out[count - 1] != want) {
            fprintf(stderr, "loom-soak: rank %d: call %ld: got %g, want %g\n", rank, *seq,
                    (double)out[0], (double)want);
            return 1;
        }
    }
    double mine[3] = {(now_s() - t0) / (double)calls * 1e6, rss_kib(), open_fds()};
    double all[3];
    loom_status_t st = loom_allreduce(comm, mine, all, 3, LOOM_FLOAT64, LOOM_MAX, NULL, NULL);
    if (st != LOOM_SUCCESS) {
        return fail(comm, "allreduce of the figures", st);
    }
    ++*seq;
    w->us_per_call = all[0];
    w->rss_kib     = all[1];
    w->fds         = all[2];
    return 0;
}

int main(int argc, char** argv) {
    long calls = 100000, window = 0;
    size_t bytes = 8;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
            calls = atol(argv[++i]);
        } else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
            bytes = (size_t)atol(argv[++i]);
        } else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
            window = atol(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: loom-soak [--calls N] [--bytes B (multiple of 4, >= 4)] "
                    "[--window W (calls measured after a warm-up window and at the end; default "
                    "N/10)]\n");
            return 2;
        }
    }
    if (window <= 0) {
        window = calls / 10 > 0 ? calls / 10 : 1;
    }
    if (calls < 3 * window || bytes < 4 || bytes % 4 != 0) {
        fprintf(stderr, "loom-soak: need calls >= 3 x window and bytes a positive multiple of 4\n");
        return 2;
    }
    loom_comm_t comm = NULL;
    loom_status_t st = loom_comm_create(NULL, &comm);
    if (st != LOOM_SUCCESS) {
        fprintf(stderr, "loom-soak: loom_comm_create: %s: %s\n", loom_status_string(st),
                loom_last_error_message());
        return 1;
    }
    size_t count = bytes / 4;
    float* in    = calloc(count, sizeof(float));
    float* out   = calloc(count, sizeof(float));
    long seq     = 0;
    struct window start, mid, end;
    double t0 = now_s();
    int rc    = in == NULL || out == NULL;
    // The start window follows a first window of warm-up, so pools filled once and the
    // tuner's first choices are not counted as growth.
    rc = rc || run(comm, window, in, out, count, &seq, &mid);
    rc = rc || run(comm, window, in, out, count, &seq, &start);
    if (calls > 3 * window) {
        rc = rc || run(comm, calls - 3 * window, in, out, count, &seq, &mid);
    }
    rc             = rc || run(comm, window, in, out, count, &seq, &end);
    double total_s = now_s() - t0;
    if (rc == 0 && loom_comm_rank(comm) == 0) {
        printf(
            "loom-soak: %d ranks, allreduce float32 sum of %zu B, %ld calls in %.1f s "
            "(every result checked)\n",
            loom_comm_size(comm), bytes, seq, total_s);
        printf("%-8s %10s %12s %14s %8s\n", "window", "calls", "us/call", "rss_kib(max)",
               "fds(max)");
        printf("%-8s %10ld %12.2f %14.0f %8.0f\n", "start", window, start.us_per_call,
               start.rss_kib, start.fds);
        printf("%-8s %10ld %12.2f %14.0f %8.0f\n", "end", window, end.us_per_call, end.rss_kib,
               end.fds);
        printf("growth: rss %+.0f KiB, fds %+.0f, time per call %+.1f %%\n",
               end.rss_kib - start.rss_kib, end.fds - start.fds,
               (end.us_per_call / start.us_per_call - 1) * 100);
    }
    free(in);
    free(out);
    loom_comm_destroy(comm);
    return rc;
}
