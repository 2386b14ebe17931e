// SPDX-License-Identifier: Apache-2.0
/* The program the transport-choice test (run_transport_choice.sh) starts as every rank:
 * a communicator from the environment alone, one all-reduce checked, then one line saying
 * what carried it ("shm", or "tcp" for any network transport: the tuner's cost class). */
#include <loom/loom.h>
#include <stdio.h>

int main(void) {
    loom_comm_t comm = NULL;
    loom_status_t st = loom_comm_create(NULL, &comm);
    if (st != LOOM_SUCCESS) {
        fprintf(stderr, "transport_probe: loom_comm_create: %s\n", loom_status_string(st));
        return 1;
    }
    int rank = loom_comm_rank(comm), size = loom_comm_size(comm);
    int one = 1, sum = 0;
    st                     = loom_allreduce(comm, &one, &sum, 1, LOOM_INT32, LOOM_SUM, NULL, NULL);
    loom_calibration_t cal = {0};
    cal.struct_size        = sizeof cal;
    loom_status_t cst      = loom_comm_calibration(comm, &cal);
    loom_comm_destroy(comm);
    if (st != LOOM_SUCCESS || sum != size || cst != LOOM_SUCCESS) {
        fprintf(stderr, "transport_probe: rank %d: allreduce %s, sum %d of %d\n", rank,
                loom_status_string(st), sum, size);
        return 1;
    }
    printf("rank %d of %d: allreduce ok over %s\n", rank, size, cal.transport);
    return 0;
}
