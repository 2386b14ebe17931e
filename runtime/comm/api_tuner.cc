// SPDX-License-Identifier: Apache-2.0
// The C API of the tuner and the traffic counters: loom_comm_explain, loom_comm_calibrate,
// loom_comm_calibration, loom_comm_traffic (loom.h).
#include <loom/loom.h>

#include <cstdio>
#include <cstring>

#include "comm/api_handle.hh"
#include "comm/comm.hh"

using loom::comm::call_args;
using loom::comm::call_kind;
using loom::comm::communicator;
using loom::comm::guarded;
using loom::comm::null_argument;

namespace {

loom_status_t fail(const loom::status& st, const communicator* c, const char* what) {
    return loom::comm::record_error(st, c ? c->rank() : -1, what);
}

// A caller's versioned struct must at least hold the fields we fill.
template <class T>
bool sized(const T* out) {
    return out->struct_size >= sizeof(T);
}

template <size_t N>
void copy_string(char (&dst)[N], const std::string& src) {
    std::snprintf(dst, N, "%s", src.c_str());
}

void fill(loom_calibration_t* out, const loom::tuner::machine_params& p) {
    copy_string(out->host, p.host);
    copy_string(out->transport, p.transport);
    out->alpha_s            = p.alpha_s;
    out->bw_bytes_per_s     = p.bw_bytes_per_s;
    out->reduce_bytes_per_s = p.reduce_bytes_per_s;
    out->alpha_switch_s     = p.switch_alpha();
    copy_string(out->source, p.source);
    copy_string(out->file, p.file);
}

call_kind kind_of(loom_collective_t coll) {
    switch (coll) {
        case LOOM_BROADCAST:
            return call_kind::broadcast;
        case LOOM_REDUCE:
            return call_kind::reduce;
        case LOOM_REDUCE_SCATTER:
            return call_kind::reduce_scatter;
        case LOOM_ALLGATHER:
            return call_kind::allgather;
        case LOOM_ALLTOALL:
            return call_kind::alltoall;
        case LOOM_SENDRECV:
            return call_kind::send;
        default:
            return call_kind::allreduce;
    }
}

}  // namespace

loom_status_t loom_comm_traffic(loom_comm_t comm, loom_traffic_t* out) {
    if (!comm || !out) {
        return null_argument("loom_comm_traffic", comm ? "out" : "comm");
    }
    if (!sized(out)) {
        return fail(loom::invalid_argument("loom_comm_traffic: out->struct_size is " +
                                           std::to_string(out->struct_size) + ", expected " +
                                           std::to_string(sizeof(loom_traffic_t))),
                    comm->impl.get(), "");
    }
    loom::engine::traffic_counters t = comm->impl->traffic();
    out->sent_bytes                  = t.sent_bytes;
    out->recv_bytes                  = t.recv_bytes;
    out->sent_msgs                   = t.sent_msgs;
    out->recv_msgs                   = t.recv_msgs;
    out->switch_sent_bytes           = t.switch_sent_bytes;
    out->switch_recv_bytes           = t.switch_recv_bytes;
    return LOOM_SUCCESS;
}

loom_status_t loom_comm_calibration(loom_comm_t comm, loom_calibration_t* out) {
    if (!comm || !out) {
        return null_argument("loom_comm_calibration", comm ? "out" : "comm");
    }
    if (!sized(out)) {
        return fail(loom::invalid_argument("loom_comm_calibration: out->struct_size is too small"),
                    comm->impl.get(), "");
    }
    fill(out, comm->impl->machine());
    return LOOM_SUCCESS;
}

loom_status_t loom_comm_calibrate(loom_comm_t comm, int thorough, loom_calibration_t* out) {
    if (!comm) {
        return null_argument("loom_comm_calibrate", "comm");
    }
    if (out && !sized(out)) {
        return fail(loom::invalid_argument("loom_comm_calibrate: out->struct_size is too small"),
                    comm->impl.get(), "");
    }
    return guarded("loom_comm_calibrate", [&]() -> loom_status_t {
        if (loom::status st = comm->impl->calibrate(thorough != 0); !st) {
            return fail(st, comm->impl.get(), "calibrate");
        }
        if (out) {
            fill(out, comm->impl->machine());
        }
        return LOOM_SUCCESS;
    });
}

loom_status_t loom_comm_explain(loom_comm_t comm, loom_collective_t coll, size_t count,
                                loom_dtype_t dtype, loom_op_t op, int root,
                                const loom_coll_attr_t* attr, loom_explain_t* out, char* text,
                                size_t text_size) {
    if (!comm || !out) {
        return null_argument("loom_comm_explain", comm ? "out" : "comm");
    }
    communicator& c = *comm->impl;
    if (!sized(out)) {
        return fail(loom::invalid_argument("loom_comm_explain: out->struct_size is too small"), &c,
                    "");
    }
    if (static_cast<int>(coll) < 0 || static_cast<int>(coll) >= LOOM_COLLECTIVE_COUNT) {
        return fail(loom::invalid_argument("loom_comm_explain: unknown primitive " +
                                           std::to_string(static_cast<int>(coll))),
                    &c, "");
    }
    // The call as it would be made, with stand-in buffers: nothing is read or written.
    static char stand_in_send, stand_in_recv;
    call_args a;
    a.kind    = kind_of(coll);
    a.sendbuf = &stand_in_send;
    a.recvbuf = &stand_in_recv;
    a.count   = count;
    a.dtype   = dtype;
    a.op      = op;
    a.root    = root;
    a.attr    = attr;
    if (coll == LOOM_SENDRECV) {
        a.peer = (c.rank() + 1) % c.size();
        if (c.size() == 1) {
            return fail(loom::invalid_argument("loom_comm_explain: sendrecv needs two ranks"), &c,
                        "send");
        }
    }
    return guarded("loom_comm_explain", [&]() -> loom_status_t {
        auto e = c.explain(a);
        if (!e) {
            return fail(e.error(), &c, loom::comm::kind_name(a.kind));
        }
        copy_string(out->algorithm, std::string(e->chosen->name));
        copy_string(out->origin, e->origin);
        out->predicted_s  = e->predicted_s;
        out->n_candidates = 0;
        for (const auto& k : e->ranking.candidates) {
            if (out->n_candidates == LOOM_EXPLAIN_MAX_CANDIDATES) {
                break;
            }
            loom_explain_candidate_t& dst = out->candidates[out->n_candidates++];
            copy_string(dst.algorithm, std::string(k.algo->name));
            dst.applicable  = k.applicable ? 1 : 0;
            dst.predicted_s = k.time_s;
            copy_string(dst.reason, k.reason);
        }
        if (text && text_size > 0) {
            std::snprintf(text, text_size, "%s", e->text.c_str());
        }
        return LOOM_SUCCESS;
    });
}
