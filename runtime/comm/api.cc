// SPDX-License-Identifier: Apache-2.0
// The C ABI (loom.h), thin: convert handles, check for NULL, call the communicator, record
// the failure for loom_last_error. No exception crosses this boundary
// (docs/architecture.md#conventions): the few that can arise (allocation) become status codes here.
#include <loom/loom.h>

#include <cstring>

#include "bootstrap/bootstrap.hh"
#include "comm/api_handle.hh"
#include "comm/comm.hh"
#include "comm/request_registry.hh"

using loom::comm::call_args;
using loom::comm::call_kind;
using loom::comm::communicator;
using loom::comm::guarded;
using loom::comm::null_argument;
using loom::comm::raw;
using loom::comm::request_handle;

loom_status_t loom::comm::null_argument(const char* what, const char* name) {
    return record_error(invalid_argument(std::string(what) + ": " + name + " is NULL"), -1, what);
}

namespace {

// Null for a value that names no live request: never dereferenced before it is known good.
request_handle* handle_of(loom_request_t req) {
    return loom::comm::request_registry::decode(req);
}

// A freed handle, a stale one, one of a destroyed communicator or garbage: a caller's error,
// reported rather than followed.
loom_status_t freed_request(const char* what) {
    return loom::comm::record_error(
        loom::invalid_argument(std::string(what) +
                               ": not a live request (garbage, already freed, or of a "
                               "destroyed communicator)"),
        -1, what);
}

// Blocking or not, the shared tail of every collective entry point.
loom_status_t run_call(loom_comm_t comm, const call_args& a, loom_request_t* req) {
    const char* what = loom::comm::kind_name(a.kind);
    if (!comm) {
        return null_argument(what, "comm");
    }
    communicator& c = *comm->impl;
    return guarded(what, [&]() -> loom_status_t {
        if (!req) {
            return c.run_blocking(a);
        }
        *req   = nullptr;
        auto h = c.start_nonblocking(a);
        if (!h) {
            return loom::comm::record_error(h.error(), c.rank(), what);
        }
        *req = c.handle_value(*h);
        return LOOM_SUCCESS;
    });
}

call_args make_args(call_kind kind, const void* send, void* recv, size_t count, loom_dtype_t dtype,
                    const loom_coll_attr_t* attr) {
    call_args a;
    a.kind    = kind;
    a.sendbuf = send;
    a.recvbuf = recv;
    a.count   = count;
    a.dtype   = raw(dtype);
    a.attr    = attr;
    return a;
}

}  // namespace

extern "C" {

loom_status_t loom_config_init(loom_config_t* config) {
    if (!config) {
        return null_argument("loom_config_init", "config");
    }
    *config             = loom_config_t{};
    config->struct_size = sizeof *config;
    config->rank        = -1;
    config->size        = -1;
    config->progress    = LOOM_PROGRESS_DEFAULT;
    return LOOM_SUCCESS;
}

loom_status_t loom_coll_attr_init(loom_coll_attr_t* attr) {
    if (!attr) {
        return null_argument("loom_coll_attr_init", "attr");
    }
    *attr             = loom_coll_attr_t{};
    attr->struct_size = sizeof *attr;
    return LOOM_SUCCESS;
}

loom_status_t loom_comm_create(const loom_config_t* config, loom_comm_t* out) {
    if (!out) {
        return null_argument("loom_comm_create", "out");
    }
    *out = nullptr;
    return guarded("loom_comm_create", [&]() -> loom_status_t {
        loom::comm::settings s;
        std::string address;
        loom::bootstrap::identity id;
        if (loom::status st = loom::comm::resolve_settings(config, &s, &address, &id); !st) {
            return loom::comm::record_error(st, -1, "");
        }
        auto store = loom::bootstrap::connect_store(address, id, id.timeout_s);
        if (!store) {
            return loom::comm::record_error(store.error(), s.rank, "");
        }
        std::shared_ptr<loom::kv_store> shared(std::move(store).value());
        auto c = communicator::create(std::move(s), std::move(shared));
        if (!c) {
            return loom::comm::record_error(c.error(), id.rank, "");
        }
        *out = new loom_comm_s{std::move(c).value()};
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_comm_destroy(loom_comm_t comm) {
    if (!comm) {
        return null_argument("loom_comm_destroy", "comm");
    }
    return guarded("loom_comm_destroy", [&]() -> loom_status_t {
        delete comm;
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_comm_abort(loom_comm_t comm, const char* reason) {
    if (!comm) {
        return null_argument("loom_comm_abort", "comm");
    }
    return guarded("loom_comm_abort", [&]() -> loom_status_t {
        comm->impl->abort(reason ? reason : "loom_comm_abort");
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_comm_split(loom_comm_t comm, int color, int key, loom_comm_t* out) {
    if (!comm || !out) {
        return null_argument("loom_comm_split", comm ? "out" : "comm");
    }
    *out = nullptr;
    return guarded("loom_comm_split", [&]() -> loom_status_t {
        std::unique_ptr<communicator> child;
        if (loom::status st = comm->impl->split(color, key, &child); !st) {
            return loom::comm::record_error(st, comm->impl->rank(), "split");
        }
        if (child) {
            *out = new loom_comm_s{std::move(child)};
        }
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_comm_link_stats(loom_comm_t comm, loom_link_stat_t* out, int max, int* n) {
    if (!comm || !n) {
        return null_argument("loom_comm_link_stats", comm ? "n" : "comm");
    }
    if (max < 0 || (max > 0 && !out)) {
        return loom::comm::record_error(
            loom::invalid_argument("loom_comm_link_stats: max must be >= 0, and out non-NULL "
                                   "when max > 0"),
            comm->impl->rank(), "");
    }
    *n = 0;
    return guarded("loom_comm_link_stats", [&]() -> loom_status_t {
        auto stats = comm->impl->link_stats();
        if (!stats) {
            return loom::comm::record_error(stats.error(), comm->impl->rank(), "");
        }
        *n = static_cast<int>(stats->size());
        for (int i = 0; i < max && i < *n; ++i) {
            const auto& s = (*stats)[static_cast<size_t>(i)];
            out[i]        = loom_link_stat_t{s.peer,      s.sent_bytes, s.recv_bytes,
                                      s.sent_msgs, s.recv_msgs,  s.forwarded};
        }
        return LOOM_SUCCESS;
    });
}

int loom_comm_rank(loom_comm_t comm) {
    return comm ? comm->impl->rank() : -1;
}

int loom_comm_size(loom_comm_t comm) {
    return comm ? comm->impl->size() : -1;
}

loom_status_t loom_broadcast(loom_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                             loom_dtype_t dtype, int root, const loom_coll_attr_t* attr,
                             loom_request_t* req) {
    call_args a = make_args(call_kind::broadcast, sendbuf, recvbuf, count, dtype, attr);
    a.root      = root;
    return run_call(comm, a, req);
}

loom_status_t loom_reduce(loom_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                          loom_dtype_t dtype, loom_op_t op, int root, const loom_coll_attr_t* attr,
                          loom_request_t* req) {
    call_args a = make_args(call_kind::reduce, sendbuf, recvbuf, count, dtype, attr);
    a.op        = raw(op);
    a.root      = root;
    return run_call(comm, a, req);
}

loom_status_t loom_allreduce(loom_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                             loom_dtype_t dtype, loom_op_t op, const loom_coll_attr_t* attr,
                             loom_request_t* req) {
    call_args a = make_args(call_kind::allreduce, sendbuf, recvbuf, count, dtype, attr);
    a.op        = raw(op);
    return run_call(comm, a, req);
}

loom_status_t loom_reduce_scatter(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                  size_t count, loom_dtype_t dtype, loom_op_t op,
                                  const loom_coll_attr_t* attr, loom_request_t* req) {
    call_args a = make_args(call_kind::reduce_scatter, sendbuf, recvbuf, count, dtype, attr);
    a.op        = raw(op);
    return run_call(comm, a, req);
}

loom_status_t loom_allgather(loom_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                             loom_dtype_t dtype, const loom_coll_attr_t* attr,
                             loom_request_t* req) {
    return run_call(comm, make_args(call_kind::allgather, sendbuf, recvbuf, count, dtype, attr),
                    req);
}

loom_status_t loom_alltoall(loom_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                            loom_dtype_t dtype, const loom_coll_attr_t* attr, loom_request_t* req) {
    return run_call(comm, make_args(call_kind::alltoall, sendbuf, recvbuf, count, dtype, attr),
                    req);
}

loom_status_t loom_send(loom_comm_t comm, const void* buf, size_t count, loom_dtype_t dtype,
                        int peer, const loom_coll_attr_t* attr, loom_request_t* req) {
    call_args a = make_args(call_kind::send, buf, nullptr, count, dtype, attr);
    a.peer      = peer;
    return run_call(comm, a, req);
}

loom_status_t loom_recv(loom_comm_t comm, void* buf, size_t count, loom_dtype_t dtype, int peer,
                        const loom_coll_attr_t* attr, loom_request_t* req) {
    call_args a = make_args(call_kind::recv, nullptr, buf, count, dtype, attr);
    a.peer      = peer;
    return run_call(comm, a, req);
}

loom_status_t loom_barrier(loom_comm_t comm, const loom_coll_attr_t* attr, loom_request_t* req) {
    return run_call(comm, make_args(call_kind::barrier, nullptr, nullptr, 0, LOOM_UINT8, attr),
                    req);
}

loom_status_t loom_test(loom_request_t req, int* done) {
    if (!req || !done) {
        return null_argument("loom_test", req ? "done" : "req");
    }
    request_handle* h = handle_of(req);
    if (!h) {
        return freed_request("loom_test");
    }
    return guarded("loom_test", [&] { return h->comm->test(h, done); });
}

loom_status_t loom_wait(loom_request_t req) {
    if (!req) {
        return null_argument("loom_wait", "req");
    }
    request_handle* h = handle_of(req);
    if (!h) {
        return freed_request("loom_wait");
    }
    return guarded("loom_wait", [&] { return h->comm->wait(h, -1); });
}

loom_status_t loom_wait_timeout(loom_request_t req, double timeout_s) {
    if (!req) {
        return null_argument("loom_wait_timeout", "req");
    }
    if (!(timeout_s >= 0)) {
        return loom::comm::record_error(
            loom::invalid_argument("loom_wait_timeout: timeout_s must be >= 0"), -1,
            "loom_wait_timeout");
    }
    request_handle* h = handle_of(req);
    if (!h) {
        return freed_request("loom_wait_timeout");
    }
    return guarded("loom_wait_timeout", [&] { return h->comm->wait(h, timeout_s); });
}

loom_status_t loom_progress(loom_comm_t comm) {
    if (!comm) {
        return null_argument("loom_progress", "comm");
    }
    return guarded("loom_progress", [&]() -> loom_status_t {
        comm->impl->progress();
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_request_free(loom_request_t req) {
    if (!req) {
        return LOOM_SUCCESS;
    }
    request_handle* h = handle_of(req);
    if (!h) {
        return freed_request("loom_request_free");
    }
    return guarded("loom_request_free", [&] { return h->comm->free_request(h); });
}

}  // extern "C"
