// SPDX-License-Identifier: Apache-2.0
/* The smallest job: start, join, one barrier, leave. Built twice: against loom
 * (-DPROBE_LOOM) and against MPI (mpicc). launch.sh times the launcher around it. */
#include <stdio.h>

#ifdef PROBE_LOOM
#include <loom/loom.h>

int main(void) {
    loom_comm_t comm = NULL;
    if (loom_comm_create(NULL, &comm) != LOOM_SUCCESS ||
        loom_barrier(comm, NULL, NULL) != LOOM_SUCCESS) {
        fprintf(stderr, "launch_probe: %s\n", loom_last_error_message());
        return 1;
    }
    return loom_comm_destroy(comm) == LOOM_SUCCESS ? 0 : 1;
}
#else
#include <mpi.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
#endif
