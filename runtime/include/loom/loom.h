/* loom — poll-mode collective communication for switch and torus fabrics.
 *
 * The public C ABI. Only C types cross this boundary (DESIGN.md "Conventions"); every
 * fallible call returns a loom_status_t that loom_status_string() turns into text.
 */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes, grouped by class (STYLE.md G7). Values are stable ABI. */
typedef enum loom_status {
    LOOM_SUCCESS              = 0,
    LOOM_IN_PROGRESS          = 1,  /**< a non-blocking operation has not completed yet */
    LOOM_ERR_INVALID_ARGUMENT = 2,  /**< invalid usage: bad pointer, value or combination */
    LOOM_ERR_MISMATCH         = 3,  /**< ranks disagree on a call (primitive, count, dtype) */
    LOOM_ERR_PEER_FAILURE     = 4,  /**< a remote rank died or its connection broke */
    LOOM_ERR_TIMEOUT          = 5,  /**< a deadline passed while waiting */
    LOOM_ERR_NO_RESOURCE      = 6,  /**< a pool, slot or memory limit was reached */
    LOOM_ERR_SYSTEM           = 7,  /**< an operating-system call failed */
    LOOM_ERR_INTERNAL         = 8,  /**< an invariant of loom itself broke (a bug) */
    LOOM_ERR_NOT_SUPPORTED    = 9,  /**< valid, but not available here (constraint, build) */
    LOOM_ERR_NOT_APPLICABLE   = 10, /**< an algorithm's constraints exclude this call */
    LOOM_ERR_PARSE            = 11, /**< malformed text: schedule, topology, parameter */
    LOOM_ERR_VERIFY           = 12, /**< a schedule failed verification */
} loom_status_t;

/** Returns a static, human-readable name for a status. Never NULL; thread-safe. */
const char* loom_status_string(loom_status_t status);

/** Element types. Values are stable ABI. */
typedef enum loom_dtype {
    LOOM_INT8     = 0,
    LOOM_UINT8    = 1,
    LOOM_INT32    = 2,
    LOOM_UINT32   = 3,
    LOOM_INT64    = 4,
    LOOM_UINT64   = 5,
    LOOM_FLOAT16  = 6,
    LOOM_BFLOAT16 = 7,
    LOOM_FLOAT32  = 8,
    LOOM_FLOAT64  = 9,
    LOOM_DTYPE_COUNT
} loom_dtype_t;

/** Reduction operators. Values are stable ABI. */
typedef enum loom_op {
    LOOM_SUM  = 0,
    LOOM_PROD = 1,
    LOOM_MIN  = 2,
    LOOM_MAX  = 3,
    LOOM_AVG  = 4,
    LOOM_OP_COUNT
} loom_op_t;

/** Collective primitives. Values are stable ABI. */
typedef enum loom_collective {
    LOOM_BROADCAST      = 0,
    LOOM_REDUCE         = 1,
    LOOM_ALLREDUCE      = 2,
    LOOM_REDUCE_SCATTER = 3,
    LOOM_ALLGATHER      = 4,
    LOOM_ALLTOALL       = 5,
    LOOM_SENDRECV       = 6,
    LOOM_COLLECTIVE_COUNT
} loom_collective_t;

/** Size in bytes of one element of @p dtype, or 0 for an unknown type. */
size_t loom_dtype_size(loom_dtype_t dtype);

/** The library version, e.g. "0.1.0". Static string; thread-safe. */
const char* loom_version(void);

/** The build's optional back ends and whether each is enabled, one "name: state;" each. */
const char* loom_build_features(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_LOOM_H */
