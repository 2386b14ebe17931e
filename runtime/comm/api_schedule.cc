// SPDX-License-Identifier: Apache-2.0
// The C ABI of user schedules (loom.h: loom_schedule_*), thin over user_schedule and the
// communicator, errors recorded for loom_last_error as every entry point does.
#include <loom/loom.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "base/check.hh"
#include "base/text_file.hh"
#include "comm/api_handle.hh"
#include "comm/comm.hh"
#include "comm/user_schedule.hh"

struct loom_schedule_s {
    std::unique_ptr<loom::comm::user_schedule> impl;
};

namespace {

using loom::comm::guarded;
using loom::comm::null_argument;
using loom::comm::raw;
using loom::comm::record_error;

loom_status_t load(loom_comm_t comm, std::string_view text, std::string origin,
                   loom_schedule_t* out) {
    auto s = loom::comm::user_schedule::load(*comm->impl, text, std::move(origin));
    if (!s) {
        return record_error(s.error(), comm->impl->rank(), "loom_schedule_load");
    }
    *out = new loom_schedule_s{std::move(s).value()};
    return LOOM_SUCCESS;
}

// The attribute of a run: its timeout; what a schedule fixes itself (algorithm, segments,
// channels) may only be left at its default.
loom::status read_attr(const loom_coll_attr_t* at, double* timeout_s) {
    *timeout_s = -1;
    if (!at) {
        return loom::status::ok();
    }
    using loom::comm::has_field;
    LOOM_CHECK(loom::comm::check_struct_size(at->struct_size, sizeof *at, "loom_coll_attr_t"));
    const size_t n = at->struct_size;
    if (has_field(n, offsetof(loom_coll_attr_t, algorithm) + sizeof at->algorithm) &&
        at->algorithm) {
        return loom::invalid_argument(
            "loom_schedule_run: attr->algorithm must be NULL (the schedule is the algorithm)");
    }
    if (has_field(n, offsetof(loom_coll_attr_t, timeout_s) + sizeof at->timeout_s)) {
        if (std::isnan(at->timeout_s)) {
            return loom::invalid_argument("loom_schedule_run: attr->timeout_s is NaN");
        }
        *timeout_s = at->timeout_s > 0 ? at->timeout_s : -1;
    }
    if ((has_field(n, offsetof(loom_coll_attr_t, segments) + sizeof at->segments) &&
         at->segments > 1) ||
        (has_field(n, offsetof(loom_coll_attr_t, channels) + sizeof at->channels) &&
         at->channels > 1)) {
        return loom::invalid_argument(
            "loom_schedule_run: attr->segments and attr->channels must be 0 or 1 (the schedule "
            "fixes its own)");
    }
    return loom::status::ok();
}

}  // namespace

extern "C" {

loom_status_t loom_schedule_load(loom_comm_t comm, const char* text, size_t length,
                                 loom_schedule_t* out) {
    if (!out) {
        return null_argument("loom_schedule_load", "out");
    }
    *out = nullptr;
    if (!comm) {
        return null_argument("loom_schedule_load", "comm");
    }
    if (!text && length > 0) {
        return null_argument("loom_schedule_load", "text");
    }
    return guarded("loom_schedule_load", [&] {
        return load(comm, std::string_view(text ? text : "", length), "schedule text", out);
    });
}

loom_status_t loom_schedule_load_file(loom_comm_t comm, const char* path, loom_schedule_t* out) {
    if (!out) {
        return null_argument("loom_schedule_load_file", "out");
    }
    *out = nullptr;
    if (!comm) {
        return null_argument("loom_schedule_load_file", "comm");
    }
    if (!path) {
        return null_argument("loom_schedule_load_file", "path");
    }
    return guarded("loom_schedule_load_file", [&]() -> loom_status_t {
        auto text = loom::read_text_file(path, "schedule file", loom::max_schedule_file_bytes);
        if (!text) {
            return record_error(text.error(), comm->impl->rank(), "loom_schedule_load");
        }
        return load(comm, *text, path, out);
    });
}

loom_status_t loom_schedule_query(loom_schedule_t schedule, loom_schedule_info_t* out) {
    if (!schedule) {
        return null_argument("loom_schedule_query", "schedule");
    }
    if (!out) {
        return null_argument("loom_schedule_query", "out");
    }
    if (out->struct_size < sizeof(size_t)) {
        return record_error(
            loom::comm::check_struct_size(out->struct_size, sizeof *out, "loom_schedule_info_t"),
            -1, "loom_schedule_query");
    }
    const loom::comm::user_schedule& s = *schedule->impl;
    loom_schedule_info_t info{};
    info.struct_size  = out->struct_size;
    info.collective   = static_cast<loom_collective_t>(s.info().coll);
    info.ranks        = s.info().nranks;
    info.count        = static_cast<size_t>(s.info().count);
    info.root         = s.info().root;
    info.peer         = s.info().peer;
    info.input_count  = static_cast<size_t>(s.input_count());
    info.output_count = static_cast<size_t>(s.output_count());
    // Only the fields the caller's struct has (ABI versioning, as loom_config_t).
    std::memcpy(out, &info, std::min(out->struct_size, sizeof info));
    return LOOM_SUCCESS;
}

loom_status_t loom_schedule_run(loom_schedule_t schedule, loom_collective_t coll,
                                const void* sendbuf, void* recvbuf, size_t count,
                                loom_dtype_t dtype, loom_op_t op, const loom_coll_attr_t* attr,
                                loom_request_t* req) {
    if (!schedule) {
        return null_argument("loom_schedule_run", "schedule");
    }
    loom::comm::user_schedule& s = *schedule->impl;
    loom::comm::communicator& c  = s.comm();
    loom::comm::schedule_call call;
    call.coll    = raw(coll);
    call.sendbuf = sendbuf;
    call.recvbuf = recvbuf;
    call.count   = count;
    call.dtype   = raw(dtype);
    call.op      = raw(op);
    return guarded("loom_schedule_run", [&]() -> loom_status_t {
        if (loom::status st = read_attr(attr, &call.timeout_s); !st) {
            return record_error(st, c.rank(), "loom_schedule_run");
        }
        if (!req) {
            return c.run_schedule_blocking(s, call);
        }
        *req   = nullptr;
        auto h = c.start_schedule_nonblocking(s, call);
        if (!h) {
            return record_error(h.error(), c.rank(), "loom_schedule_run");
        }
        *req = c.handle_value(*h);
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_schedule_free(loom_schedule_t schedule) {
    delete schedule;
    return LOOM_SUCCESS;
}

}  // extern "C"
