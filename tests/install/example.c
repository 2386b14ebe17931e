// SPDX-License-Identifier: Apache-2.0
// The C API of the README as a whole program: an all-reduce, then a non-blocking all-gather
// overlapped with other work, on a communicator made from the environment (rank 0 of 1 when
// started alone; `loomrun -n 4 -- ./example` runs four ranks). Exits 0 when both results
// are right. scripts/test.sh builds it against the installed package through pkg-config
// (shared and static) and through CMake (tests/install/check_install.sh).
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 1024 };

static int report(const char* what) {
    loom_error_info_t e = {.struct_size = sizeof e};
    loom_last_error(&e); /* e.rank, e.peer, e.collective, e.seq, e.step, e.message */
    fprintf(stderr, "example: %s: %s\n", what, e.message);
    return 1;
}

int main(void) {
    loom_comm_t comm;
    if (loom_comm_create(NULL, &comm) != LOOM_SUCCESS) {
        return report("loom_comm_create");
    }
    int rank = loom_comm_rank(comm);
    int size = loom_comm_size(comm);

    static float in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i] = (float)(rank + i);
    }
    loom_status_t st = loom_allreduce(comm, in, out, N, LOOM_FLOAT32, LOOM_SUM, NULL, NULL);
    if (st != LOOM_SUCCESS) {
        return report("loom_allreduce");
    }
    for (int i = 0; i < N; i++) {
        if (out[i] != (float)(size * i + size * (size - 1) / 2)) {
            fprintf(stderr, "example: allreduce: element %d is %g\n", i, out[i]);
            return 1;
        }
    }

    /* Each rank contributes its rank; the result is 0, 1, ..., size - 1 everywhere. */
    float mine = (float)rank;
    float* all = calloc((size_t)size, sizeof *all);
    if (all == NULL) {
        return 1;
    }
    loom_request_t req;
    int done = 0;
    if (loom_allgather(comm, &mine, all, (size_t)size, LOOM_FLOAT32, NULL, &req) != LOOM_SUCCESS) {
        return report("loom_allgather");
    }
    while ((st = loom_test(req, &done)) == LOOM_SUCCESS && !done) {
        /* other work */
    }
    loom_request_free(req);
    if (st != LOOM_SUCCESS) {
        return report("loom_allgather");
    }
    for (int r = 0; r < size; r++) {
        if (all[r] != (float)r) {
            fprintf(stderr, "example: allgather: block %d is %g\n", r, all[r]);
            return 1;
        }
    }
    free(all);
    if (rank == 0) {
        printf("loom %s: allreduce and allgather over %d rank(s) ok\n", loom_version(), size);
    }
    loom_comm_destroy(comm);
    return 0;
}
