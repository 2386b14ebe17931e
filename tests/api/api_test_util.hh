// Helpers shared by the C API suites: a one-rank communicator, message checks, byte
// patterns, one entry point per primitive, and typed element values for any dtype.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/comm.hh"
#include "kernels/reduce.hh"
#include "test_main.hh"

namespace loom::test::api {

/// A communicator of one rank (config rank 0 of 1: the self driver); fails the test if not.
inline loom_comm_t make_comm(int max_inflight = 0) {
    loom_config_t cfg;
    assert_int_equal(loom_config_init(&cfg), LOOM_SUCCESS);
    cfg.rank         = 0;
    cfg.size         = 1;
    cfg.max_inflight = max_inflight;
    loom_comm_t comm = nullptr;
    loom_status_t st = loom_comm_create(&cfg, &comm);
    if (st != LOOM_SUCCESS) {
        LOOM_FAIL(std::string("loom_comm_create: ") + loom_last_error_message());
    }
    return comm;
}

inline bool contains(const char* text, const char* part) {
    return text && std::strstr(text, part) != nullptr;
}

/// Fails the test unless the thread's last error message contains `part`.
inline void expect_message_has(const char* part) {
    if (!contains(loom_last_error_message(), part)) {
        LOOM_FAIL(std::string("last error '") + loom_last_error_message() + "' lacks '" + part +
                  "'");
    }
}

/// The byte every untouched output holds.
constexpr uint8_t pattern = 0xA5;

inline bool intact(const std::vector<uint8_t>& buf) {
    for (uint8_t b : buf) {
        if (b != pattern) {
            return false;
        }
    }
    return true;
}

/// One call of `kind` through the C API (root 0; send/recv are not covered here).
inline loom_status_t call(loom_comm_t comm, comm::call_kind kind, const void* in, void* out,
                          size_t n, loom_dtype_t dtype, loom_op_t op, const loom_coll_attr_t* attr,
                          loom_request_t* req, int root = 0) {
    using comm::call_kind;
    switch (kind) {
        case call_kind::broadcast:
            return loom_broadcast(comm, in, out, n, dtype, root, attr, req);
        case call_kind::reduce:
            return loom_reduce(comm, in, out, n, dtype, op, root, attr, req);
        case call_kind::allreduce:
            return loom_allreduce(comm, in, out, n, dtype, op, attr, req);
        case call_kind::reduce_scatter:
            return loom_reduce_scatter(comm, in, out, n, dtype, op, attr, req);
        case call_kind::allgather:
            return loom_allgather(comm, in, out, n, dtype, attr, req);
        case call_kind::alltoall:
            return loom_alltoall(comm, in, out, n, dtype, attr, req);
        case call_kind::barrier:
            return loom_barrier(comm, attr, req);
        default:
            break;
    }
    return LOOM_ERR_INTERNAL;
}

constexpr comm::call_kind data_kinds[] = {
    comm::call_kind::broadcast,      comm::call_kind::reduce,    comm::call_kind::allreduce,
    comm::call_kind::reduce_scatter, comm::call_kind::allgather, comm::call_kind::alltoall,
};

/// Stores the small integer `v` (exact in every dtype) as element i of `buf`.
inline void put(loom_dtype_t dtype, void* buf, size_t i, int64_t v) {
    auto* b = static_cast<uint8_t*>(buf);
    switch (dtype) {
        case LOOM_INT8:
        case LOOM_UINT8:
            b[i] = static_cast<uint8_t>(v);
            break;
        case LOOM_INT32:
        case LOOM_UINT32: {
            auto x = static_cast<int32_t>(v);
            std::memcpy(b + 4 * i, &x, 4);
            break;
        }
        case LOOM_INT64:
        case LOOM_UINT64:
            std::memcpy(b + 8 * i, &v, 8);
            break;
        case LOOM_FLOAT16: {
            uint16_t h = kernels::float_to_half(static_cast<float>(v));
            std::memcpy(b + 2 * i, &h, 2);
            break;
        }
        case LOOM_BFLOAT16: {
            uint16_t h = kernels::float_to_bfloat16(static_cast<float>(v));
            std::memcpy(b + 2 * i, &h, 2);
            break;
        }
        case LOOM_FLOAT32: {
            auto f = static_cast<float>(v);
            std::memcpy(b + 4 * i, &f, 4);
            break;
        }
        case LOOM_FLOAT64: {
            auto d = static_cast<double>(v);
            std::memcpy(b + 8 * i, &d, 8);
            break;
        }
        default:
            break;
    }
}

}  // namespace loom::test::api
