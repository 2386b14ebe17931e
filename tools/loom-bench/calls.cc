// SPDX-License-Identifier: Apache-2.0
// The calls loom-bench times: how a size in bytes becomes each primitive's count (nccl-tests'
// sizes, loom.h's count conventions), where in- and out-of-place calls read and write, one
// call of each primitive, and nccl-tests' bus-bandwidth factors.
#include "bench.hh"

namespace loom::bench {

shape shape_for(const call_spec& c, uint64_t bytes) {
    uint64_t elems = bytes / c.elem, n = static_cast<uint64_t>(c.n);
    switch (c.coll) {
        // nccl-tests: the buffer holds N equal blocks (reduce_scatter's input, allgather's
        // output, alltoall's both), so the element count rounds down to a multiple of N.
        // loom takes the whole vector for reduce_scatter and allgather, one block for
        // alltoall.
        case LOOM_REDUCE_SCATTER:
        case LOOM_ALLGATHER:
            return {elems / n * n, elems / n * n};
        case LOOM_ALLTOALL:
            return {elems / n, elems / n * n};
        default:
            return {elems, elems};
    }
}

shape shape_for_count(const call_spec& c, uint64_t count) {
    // The buffer as nccl-tests sizes it (the size and count columns): alltoall's holds N
    // blocks of the count, the others the count itself.
    return {count, c.coll == LOOM_ALLTOALL ? count * static_cast<uint64_t>(c.n) : count};
}

io io_for(const call_spec& c, const shape& sh, const buffers& b) {
    if (!c.inplace) {
        return {b.send, b.recv};
    }
    if (c.coll == LOOM_ALLGATHER) {
        // loom.h: in place, sendbuf = recvbuf + the byte offset of this rank's block (blocks
        // cut as in block_of: the first total % n one element longer; total is a multiple of
        // n here, so they are equal).
        uint64_t offset = sh.total / static_cast<uint64_t>(c.n) * static_cast<uint64_t>(c.rank);
        return {static_cast<char*>(b.recv) + offset * c.elem, b.recv};
    }
    return {b.recv, b.recv};
}

int send_peer(const call_spec& c) {
    return (c.rank + 1) % c.n;
}

int recv_peer(const call_spec& c) {
    return (c.rank - 1 + c.n) % c.n;
}

namespace {

// nccl-tests' sendrecv_perf: the send and the receive in flight together (a blocking send
// first would deadlock a ring of rendezvous sends), then both waited for.
loom_status_t sendrecv(loom_comm_t comm, const call_spec& c, const shape& sh, const io& p,
                       const loom_coll_attr_t* attr) {
    loom_request_t sreq = nullptr, rreq = nullptr;
    loom_status_t st = loom_recv(comm, p.out, sh.count, c.dtype, recv_peer(c), attr, &rreq);
    if (st != LOOM_SUCCESS) {
        return st;
    }
    st                 = loom_send(comm, p.in, sh.count, c.dtype, send_peer(c), attr, &sreq);
    loom_status_t sent = st == LOOM_SUCCESS ? loom_wait(sreq) : st;
    loom_status_t got  = loom_wait(rreq);
    loom_request_free(sreq);
    loom_request_free(rreq);
    return sent != LOOM_SUCCESS ? sent : got;
}

}  // namespace

loom_status_t call_once(loom_comm_t comm, const call_spec& c, const shape& sh, const io& p,
                        const loom_coll_attr_t* attr) {
    if (c.schedule != nullptr) {
        return loom_schedule_run(c.schedule, c.coll, p.in, p.out, sh.count, c.dtype, c.op, attr,
                                 nullptr);
    }
    switch (c.coll) {
        case LOOM_BROADCAST:
            return loom_broadcast(comm, p.in, p.out, sh.count, c.dtype, c.root, attr, nullptr);
        case LOOM_REDUCE:
            return loom_reduce(comm, p.in, p.out, sh.count, c.dtype, c.op, c.root, attr, nullptr);
        case LOOM_REDUCE_SCATTER:
            return loom_reduce_scatter(comm, p.in, p.out, sh.count, c.dtype, c.op, attr, nullptr);
        case LOOM_ALLGATHER:
            return loom_allgather(comm, p.in, p.out, sh.count, c.dtype, attr, nullptr);
        case LOOM_ALLTOALL:
            return loom_alltoall(comm, p.in, p.out, sh.count, c.dtype, attr, nullptr);
        case LOOM_SENDRECV:
            return sendrecv(comm, c, sh, p, attr);
        default:
            return loom_allreduce(comm, p.in, p.out, sh.count, c.dtype, c.op, attr, nullptr);
    }
}

double busbw_factor(loom_collective_t c, int n) {
    double dn = n;
    switch (c) {
        case LOOM_ALLREDUCE:
            return 2 * (dn - 1) / dn;
        case LOOM_REDUCE_SCATTER:
        case LOOM_ALLGATHER:
        case LOOM_ALLTOALL:
            return (dn - 1) / dn;
        default:  // broadcast, reduce, sendrecv
            return 1;
    }
}

}  // namespace loom::bench
