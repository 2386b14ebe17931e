// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the C API suites: a one-rank communicator, message checks, byte
// patterns, one entry point per primitive.
#pragma once

#include <loom/loom.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "c_callers.h"
#include "comm/comm.hh"
#include "test_main.hh"

namespace loom::test::api {

/// A config of rank 0 of 1 (the self driver), the rest at its defaults.
inline loom_config_t one_rank_config() {
    loom_config_t cfg;
    assert_int_equal(loom_config_init(&cfg), LOOM_SUCCESS);
    cfg.rank = 0;
    cfg.size = 1;
    return cfg;
}

/// A communicator of one_rank_config(); fails the test if not.
inline loom_comm_t make_comm(int max_inflight = 0) {
    loom_config_t cfg = one_rank_config();
    cfg.max_inflight  = max_inflight;
    loom_comm_t comm  = nullptr;
    loom_status_t st  = loom_comm_create(&cfg, &comm);
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
    expect_has(loom_last_error_message(), part);
}

/// A call attribute naming `algorithm` (NULL: the default rule), the rest at its defaults.
inline loom_coll_attr_t attr_naming(const char* algorithm) {
    loom_coll_attr_t a;
    loom_coll_attr_init(&a);
    a.algorithm = algorithm;
    return a;
}

/// The thread's last error, in full.
inline loom_error_info_t last_error() {
    loom_error_info_t info;
    info.struct_size = sizeof info;
    loom_last_error(&info);
    return info;
}

/// The byte every untouched output holds.
constexpr uint8_t pattern = 0xA5;

inline bool intact(const std::vector<uint8_t>& buf) {
    return std::ranges::all_of(buf, [](uint8_t b) { return b == pattern; });
}

/// One call of `kind` through the C API (root 0; not send, recv or barrier).
inline loom_status_t call(loom_comm_t comm, comm::call_kind kind, const void* in, void* out,
                          size_t n, loom_dtype_t dtype, loom_op_t op, const loom_coll_attr_t* attr,
                          loom_request_t* req, int root = 0) {
    return c_call_raw(comm, static_cast<int>(kind), in, out, n, dtype, op, root, attr, req);
}

constexpr comm::call_kind data_kinds[] = {
    comm::call_kind::broadcast,      comm::call_kind::reduce,    comm::call_kind::allreduce,
    comm::call_kind::reduce_scatter, comm::call_kind::allgather, comm::call_kind::alltoall,
};

}  // namespace loom::test::api
