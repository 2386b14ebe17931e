// SPDX-License-Identifier: Apache-2.0
/* The C API called from C, with plain ints for the enum parameters as any C caller may pass:
 * the one-rank suites reach the out-of-range dtype and op checks through here, because C++
 * cannot form an enum value outside its range without undefined behaviour. It is also the
 * suites' one entry point per primitive (call() in api_test_util.hh). */
#include "c_callers.h"

loom_status_t c_call_raw(loom_comm_t comm, int kind, const void* in, void* out, size_t count,
                         int dtype, int op, int root, const loom_coll_attr_t* attr,
                         loom_request_t* req) {
    loom_dtype_t d = (loom_dtype_t)dtype;
    loom_op_t o    = (loom_op_t)op;
    switch (kind) {
        case 0:
            return loom_broadcast(comm, in, out, count, d, root, attr, req);
        case 1:
            return loom_reduce(comm, in, out, count, d, o, root, attr, req);
        case 2:
            return loom_allreduce(comm, in, out, count, d, o, attr, req);
        case 3:
            return loom_reduce_scatter(comm, in, out, count, d, o, attr, req);
        case 4:
            return loom_allgather(comm, in, out, count, d, attr, req);
        case 5:
            return loom_alltoall(comm, in, out, count, d, attr, req);
        default:
            return LOOM_ERR_INTERNAL;
    }
}
