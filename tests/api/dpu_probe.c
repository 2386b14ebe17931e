// SPDX-License-Identifier: Apache-2.0
/* The program the DPU tests (run_dpu.sh) start as every rank, through loomrun --dpu:
 *   p2p SRC DST MIB   rank SRC sends MIB MiB to rank DST, which checks every byte; the other
 *                     ranks only create and destroy the communicator (so the DPUs' link
 *                     counters show the route of SRC → DST against a quiet background);
 *   kill NODE         every rank runs 1 MiB all-reduces, checking each; rank 0 SIGKILLs the
 *                     DPU of node NODE after the 20th (its pid is in the DPU's ready file,
 *                     beside the rank's LOOM_DPU_SOCKET). Every rank must then return an
 *                     error and print it ("rank R: error ..."), never hang.
 * Prints "rank R of N: C checks, F failed" as the other api programs do. */
#define _POSIX_C_SOURCE 200809L
#include <loom/loom.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static int checks, failed;

static void check(int ok, int rank, const char* what) {
    ++checks;
    if (!ok) {
        ++failed;
        fprintf(stderr, "rank %d: FAILED %s\n", rank, what);
    }
}

static int run_p2p(loom_comm_t comm, int rank, int src, int dst, size_t mib) {
    size_t n     = mib << 20;
    uint8_t* buf = malloc(n);
    if (buf == NULL) {
        return 1;
    }
    if (rank == src) {
        for (size_t i = 0; i < n; ++i) {
            buf[i] = (uint8_t)(i * 7 + 3);
        }
        check(loom_send(comm, buf, n, LOOM_UINT8, dst, NULL, NULL) == LOOM_SUCCESS, rank, "send");
    } else if (rank == dst) {
        memset(buf, 0, n);
        check(loom_recv(comm, buf, n, LOOM_UINT8, src, NULL, NULL) == LOOM_SUCCESS, rank, "recv");
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
            bad += buf[i] != (uint8_t)(i * 7 + 3);
        }
        check(bad == 0, rank, "received bytes");
    }
    free(buf);
    return 0;
}

static void kill_dpu(int node) {
    const char* sock = getenv("LOOM_DPU_SOCKET");
    char path[512];
    const char* slash = sock ? strrchr(sock, '/') : NULL;
    if (slash == NULL) {
        return;
    }
    snprintf(path, sizeof path, "%.*s/node-%d.ready", (int)(slash - sock), sock, node);
    FILE* f  = fopen(path, "r");
    long pid = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1) {
            pid = 0;
        }
        fclose(f);
    }
    if (pid > 0) {
        printf("rank 0: SIGKILL to the DPU of node %d (pid %ld)\n", node, pid);
        fflush(stdout);
        kill((pid_t)pid, SIGKILL);
    }
}

static int run_kill(loom_comm_t comm, int rank, int size, int node) {
    size_t n         = (size_t)1 << 18; /* floats: 1 MiB */
    float* in        = malloc(n * sizeof *in);
    float* out       = malloc(n * sizeof *out);
    loom_status_t st = LOOM_SUCCESS;
    for (size_t i = 0; i < n; ++i) {
        in[i] = 1.0f;
    }
    for (int iter = 0; iter < 100000 && st == LOOM_SUCCESS; ++iter) {
        if (rank == 0 && iter == 20) {
            kill_dpu(node);
        }
        st = loom_allreduce(comm, in, out, n, LOOM_FLOAT32, LOOM_SUM, NULL, NULL);
        if (st == LOOM_SUCCESS) {
            check(out[0] == (float)size && out[n - 1] == (float)size, rank, "all-reduce sum");
        }
    }
    check(st != LOOM_SUCCESS, rank, "an error once the DPU is gone");
    printf("rank %d: error after the DPU's death: %s\n", rank, loom_status_string(st));
    free(in);
    free(out);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: dpu_probe p2p SRC DST MIB | kill NODE\n");
        return 2;
    }
    loom_comm_t comm = NULL;
    loom_status_t st = loom_comm_create(NULL, &comm);
    if (st != LOOM_SUCCESS) {
        fprintf(stderr, "dpu_probe: loom_comm_create: %s\n", loom_status_string(st));
        return 1;
    }
    int rank = loom_comm_rank(comm), size = loom_comm_size(comm);
    if (strcmp(argv[1], "p2p") == 0 && argc == 5) {
        run_p2p(comm, rank, atoi(argv[2]), atoi(argv[3]), (size_t)atoi(argv[4]));
        loom_comm_destroy(comm);
    } else if (strcmp(argv[1], "kill") == 0) {
        run_kill(comm, rank, size, atoi(argv[2]));
        loom_comm_abort(comm, "a DPU was killed");
    } else {
        fprintf(stderr, "dpu_probe: unknown mode %s\n", argv[1]);
        return 2;
    }
    printf("rank %d of %d: %d checks, %d failed\n", rank, size, checks, failed);
    return failed == 0 ? 0 : 1;
}
