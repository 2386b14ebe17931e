// SPDX-License-Identifier: Apache-2.0
// Argument checks of the C API (loom.h "Conventions"): every rule a single rank can check
// before anything is sent. Cross-rank agreement (same primitive, count, dtype, op, root,
// algorithm) is checked by the engine through the call signature.
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "base/check.hh"
#include "comm/comm.hh"
#include "kernels/reduce.hh"
#include "schedule/collective.hh"
#include "schedule/step.hh"

namespace loom::comm {
namespace {

std::string who(const call_args& a, int rank) {
    return std::string(kind_name(a.kind)) + " on rank " + std::to_string(rank) + ": ";
}

bool block_is_empty(const call_args& a, int rank, int size) {
    return schedule::block_size(static_cast<int64_t>(a.count), size, rank) == 0;
}

// Which buffers a rank must pass when count > 0 (the others may be NULL): the schedules
// read the input and write the output only where these rules say, and a rank whose block
// is empty (reduce_scatter, allgather with count < size) has nothing to read or write.
bool needs_send(const call_args& a, int rank, int size) {
    switch (a.kind) {
        case call_kind::broadcast:
            return rank == a.root;
        case call_kind::allgather:
            return !block_is_empty(a, rank, size);
        case call_kind::recv:
        case call_kind::barrier:
            return false;
        default:
            return true;
    }
}

bool needs_recv(const call_args& a, int rank, int size) {
    switch (a.kind) {
        case call_kind::reduce:
            return rank == a.root;
        case call_kind::reduce_scatter:
            return !block_is_empty(a, rank, size);
        case call_kind::send:
        case call_kind::barrier:
            return false;
        default:
            return true;
    }
}

status check_count(const call_args& a, int rank, int size, size_t elem) {
    // The largest per-buffer element count: alltoall buffers hold size × count.
    size_t per_buffer = a.kind == call_kind::alltoall ? static_cast<size_t>(size) : 1;
    if (a.count > std::numeric_limits<size_t>::max() / elem / per_buffer) {
        return invalid_argument(who(a, rank) + "count " + std::to_string(a.count) + " × " +
                                std::to_string(elem) + " bytes" +
                                (per_buffer > 1 ? " × " + std::to_string(size) + " ranks" : "") +
                                " overflows size_t");
    }
    auto limit = static_cast<size_t>(schedule::max_region_count);
    if (a.count > limit / per_buffer) {
        return invalid_argument(who(a, rank) + "count " + std::to_string(a.count) +
                                " exceeds the region limit of " + std::to_string(limit) +
                                " elements per buffer");
    }
    return status::ok();
}

status check_buffers(const call_args& a, int rank, int size) {
    if (a.count == 0) {
        return status::ok();
    }
    bool send_name_is_buf = a.kind == call_kind::send;
    if (needs_send(a, rank, size) && a.sendbuf == nullptr) {
        return invalid_argument(who(a, rank) + (send_name_is_buf ? "buf" : "sendbuf") +
                                " is NULL with count " + std::to_string(a.count));
    }
    if (needs_recv(a, rank, size) && a.recvbuf == nullptr) {
        return invalid_argument(who(a, rank) + (a.kind == call_kind::recv ? "buf" : "recvbuf") +
                                " is NULL with count " + std::to_string(a.count));
    }
    return status::ok();
}

status check_ranks(const call_args& a, int rank, int size) {
    std::string range = " is outside 0.." + std::to_string(size - 1);
    if ((a.kind == call_kind::broadcast || a.kind == call_kind::reduce) &&
        (a.root < 0 || a.root >= size)) {
        return invalid_argument(who(a, rank) + "root " + std::to_string(a.root) + range);
    }
    if (a.kind == call_kind::send || a.kind == call_kind::recv) {
        if (a.peer < 0 || a.peer >= size) {
            return invalid_argument(who(a, rank) + "peer " + std::to_string(a.peer) + range);
        }
        if (a.peer == rank) {
            return invalid_argument(who(a, rank) +
                                    "peer is this rank (point-to-point needs another rank; "
                                    "copy locally instead)");
        }
    }
    return status::ok();
}

// attr->segments or attr->channels: 0 is the default (1), a negative value or one above
// `limit` an error.
status check_count_attr(const call_args& a, int rank, const char* field, int value, int limit,
                        int* out) {
    std::string named = who(a, rank) + "attr->" + field + " " + std::to_string(value);
    if (value < 0) {
        return invalid_argument(named + " is negative (0: default)");
    }
    if (value > limit) {
        return invalid_argument(named + " exceeds the limit of " + std::to_string(limit));
    }
    *out = value > 0 ? value : 1;
    return status::ok();
}

status check_attr(const call_args& a, int rank, call_options* out) {
    *out                       = call_options{};
    const loom_coll_attr_t* at = a.attr;
    if (!at) {
        return status::ok();
    }
    if (status st =
            check_struct_size(at->struct_size, sizeof(loom_coll_attr_t), "loom_coll_attr_t");
        !st) {
        return st.prefix(who(a, rank));
    }
    size_t n = at->struct_size;
    if (has_field(n, offsetof(loom_coll_attr_t, algorithm) + sizeof at->algorithm) &&
        at->algorithm) {
        out->algorithm = at->algorithm;
        if (out->algorithm.empty()) {
            return invalid_argument(who(a, rank) + "attr->algorithm is empty (NULL: default)");
        }
    }
    if (has_field(n, offsetof(loom_coll_attr_t, timeout_s) + sizeof at->timeout_s)) {
        if (std::isnan(at->timeout_s)) {
            return invalid_argument(who(a, rank) + "attr->timeout_s is NaN");
        }
        out->timeout_s = at->timeout_s > 0 ? at->timeout_s : -1;
    }
    // Each segment is a step per rank in the plan, each channel a whole schedule per rank.
    if (has_field(n, offsetof(loom_coll_attr_t, segments) + sizeof at->segments)) {
        LOOM_CHECK(
            check_count_attr(a, rank, "segments", at->segments, LOOM_MAX_SEGMENTS, &out->segments));
    }
    if (has_field(n, offsetof(loom_coll_attr_t, channels) + sizeof at->channels)) {
        LOOM_CHECK(
            check_count_attr(a, rank, "channels", at->channels, LOOM_MAX_CHANNELS, &out->channels));
    }
    return status::ok();
}

}  // namespace

status check_struct_size(size_t struct_size, size_t ours, const char* what) {
    if (struct_size < sizeof(size_t)) {
        return invalid_argument(std::string(what) + ".struct_size is " +
                                std::to_string(struct_size) + " (initialise it with its _init())");
    }
    if (struct_size > ours) {
        return not_supported(std::string(what) + ".struct_size is " + std::to_string(struct_size) +
                             ", newer than this library's " + std::to_string(ours) +
                             " (a newer loom.h than the library)");
    }
    return status::ok();
}

status check_args(const call_args& a, int rank, int size, call_options* out) {
    // Enum values arrive from C: check the integer before trusting the enum.
    int dtype = a.dtype;
    if (a.kind != call_kind::barrier && (dtype < 0 || dtype >= LOOM_DTYPE_COUNT)) {
        return invalid_argument(who(a, rank) + "unknown dtype " + std::to_string(dtype) + " (0.." +
                                std::to_string(LOOM_DTYPE_COUNT - 1) + ")");
    }
    if (kind_reduces(a.kind)) {
        int op = a.op;
        if (op < 0 || op >= LOOM_OP_COUNT) {
            return invalid_argument(who(a, rank) + "unknown op " + std::to_string(op) + " (0.." +
                                    std::to_string(LOOM_OP_COUNT - 1) + ")");
        }
        if (!kernels::reduce_kernel(dtype_of(a), op == LOOM_AVG ? LOOM_SUM : op_of(a))) {
            return invalid_argument(who(a, rank) + "no reduction for dtype " +
                                    std::to_string(dtype) + " and op " + std::to_string(op));
        }
    }
    size_t elem = a.kind == call_kind::barrier ? 1 : loom_dtype_size(dtype_of(a));
    LOOM_CHECK(check_count(a, rank, size, elem));
    LOOM_CHECK(check_ranks(a, rank, size));
    LOOM_CHECK(check_buffers(a, rank, size));
    return check_attr(a, rank, out);
}

}  // namespace loom::comm
