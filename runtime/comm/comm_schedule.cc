// SPDX-License-Identifier: Apache-2.0
// A user's schedule run as the communicator's next collective (loom_schedule_run).
//
// Every rank calls loom_schedule_run in the same order as its other collectives, even one
// whose list in the schedule is empty (a sendrecv's bystanders): the run takes the
// collective sequence number, so the k-th collective of every rank is the same call.
#include "base/check.hh"
#include "comm/comm.hh"
#include "comm/request_registry.hh"

namespace loom::comm {
namespace {

// The API call a schedule's collective stands for, for messages and loom_error_info_t.
call_kind kind_for(schedule::collective c) {
    switch (c) {
        case schedule::collective::broadcast:
            return call_kind::broadcast;
        case schedule::collective::reduce:
            return call_kind::reduce;
        case schedule::collective::allreduce:
            return call_kind::allreduce;
        case schedule::collective::reduce_scatter:
            return call_kind::reduce_scatter;
        case schedule::collective::allgather:
            return call_kind::allgather;
        case schedule::collective::alltoall:
            return call_kind::alltoall;
        case schedule::collective::sendrecv:
            return call_kind::send;
    }
    return call_kind::allreduce;
}

}  // namespace

result<engine::request*> communicator::start_schedule(user_schedule& s, const schedule_call& call,
                                                      uint32_t* seq) {
    if (aborted_.load(std::memory_order_acquire)) {  // A: pairs with the release in abort()
        return status(LOOM_ERR_PEER_FAILURE, "loom_schedule_run on rank " + std::to_string(rank()) +
                                                 ": the communicator was aborted");
    }
    LOOM_ASSIGN(auto plan, s.plan_for(call));
    engine::call_buffers b{.input  = call.sendbuf,
                           .output = call.recvbuf,
                           .dtype  = static_cast<loom_dtype_t>(call.dtype),
                           .op     = static_cast<loom_op_t>(call.op)};
    LOOM_ASSIGN(auto r, engine_->start(plan, b, coll_seq_, false, call.timeout_s));
    *seq = coll_seq_++;
    return r;
}

loom_status_t communicator::run_schedule_blocking(user_schedule& s, const schedule_call& call) {
    const call_kind kind = kind_for(s.info().coll);
    uint32_t seq         = 0;
    auto r               = start_schedule(s, call, &seq);
    if (!r) {
        return record_error(r.error(), rank(), kind_name(kind));
    }
    loom_status_t code = finish(*r, kind, engine_->wait(*r, -1));
    engine_->release(*r);
    return code;
}

result<request_handle*> communicator::start_schedule_nonblocking(user_schedule& s,
                                                                 const schedule_call& call) {
    const call_kind kind = kind_for(s.info().coll);
    LOOM_ASSIGN(request_handle * h, free_handle(kind_name(kind)));
    LOOM_ASSIGN(h->r, start_schedule(s, call, &h->seq));
    h->comm       = this;
    h->kind       = kind;
    h->generation = request_registry::next_generation();
    h->in_use     = true;
    return h;
}

}  // namespace loom::comm
