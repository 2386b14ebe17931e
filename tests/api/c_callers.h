// SPDX-License-Identifier: Apache-2.0
/* See c_callers.c. */
#ifndef LOOM_TEST_API_C_CALLERS_H
#define LOOM_TEST_API_C_CALLERS_H

#include <loom/loom.h>

#ifdef __cplusplus
extern "C" {
#endif

/** kind: 0 broadcast, 1 reduce, 2 allreduce, 3 reduce_scatter, 4 allgather, 5 alltoall. */
loom_status_t c_call_raw(loom_comm_t comm, int kind, const void* in, void* out, size_t count,
                         int dtype, int op, int root, const loom_coll_attr_t* attr,
                         loom_request_t* req);

#ifdef __cplusplus
}
#endif

#endif
