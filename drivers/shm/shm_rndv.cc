// SPDX-License-Identifier: Apache-2.0
// shm large messages (rendezvous). The sender put an RTS {address, length, op} in the ring;
// once the receive is posted the receiver either copies straight out of the sender's
// memory with process_vm_readv (CMA: one copy) or, where CMA is not permitted, asks the
// sender to stream the message through the pair's bounce channel (two copies). Either way
// the receiver ends by writing the sender's ack word, which completes the send.
//
//   R6 receiver: acks[op] CAS pending -> 1 + status (acq_rel) after its last read of the
//                message; a failed CAS means the sender revoked it: the bytes are void
//   A6 sender:   acks[op].load(acquire) before completing (reusing) the send buffer, and
//                its revoking CAS (cancel) before giving the buffer back
// (ack_word in shm.hh: generation and state in one word.)
// The bounce channel's R3/A3, R4/A4, R5/A5 are listed in shm.hh.
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.hh"
#include "drivers/shm/shm.hh"

namespace loom::drivers::shm {
namespace {

// Reads `len` bytes at `src` in process `pid` into `dst`; 0 or an errno. The kernel may
// return short reads (large lengths, page boundaries), so it loops.
int cma_read(pid_t pid, char* dst, uint64_t src, size_t len) {
    size_t done = 0;
    while (done < len) {
        iovec local{dst + done, len - done};
        iovec remote{reinterpret_cast<void*>(src + done), len - done};
        ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? errno : EFAULT;
        }
        done += size_t(n);
    }
    return 0;
}

}  // namespace

// True when the ack landed; false when the sender had revoked the message first (its call
// failed), so whatever was read is void. Either way the sender may now reuse the op.
bool shm_endpoint::ack(peer_state& ps, uint32_t remote_op, uint32_t remote_gen,
                       loom_status_t code) {
    if (remote_op >= ps.remote_max_ops) {
        return false;
    }
    std::atomic<uint64_t>& word = ps.remote_acks[remote_op];
    uint64_t expect             = ack_word::make(remote_gen, ack_word::pending);
    if (word.compare_exchange_strong(expect, ack_word::make(remote_gen, 1 + uint32_t(code)),
                                     std::memory_order_acq_rel)) {  // R6
        ring_if_asleep(ps.seg.header()->bell);
        return true;
    }
    if (expect == ack_word::make(remote_gen, ack_word::revoked)) {
        word.compare_exchange_strong(expect, ack_word::make(remote_gen, ack_word::revoke_seen),
                                     std::memory_order_acq_rel);
    }
    return false;
}

// The last byte of a pulled message is in: ack it, and complete the receive unless the
// sender withdrew the message meanwhile (then its bytes are void) or we did.
void shm_endpoint::finish_pull(peer_state& ps, op* o) {
    bool landed = ack(ps, o->remote_op, o->remote_gen, LOOM_SUCCESS);
    if (o->cancelled) {
        match_.release(o);
        return;
    }
    o->withdrawn = !landed;
    complete(o, landed ? LOOM_SUCCESS : LOOM_ERR_PEER_FAILURE, landed ? o->bytes : 0);
}

// `o` (out of every list, header already checked by deliver()) receives the rendezvous
// message `m` from ps.
void shm_endpoint::start_pull(peer_state& ps, op* o, const early_msg& m) {
    uint64_t len       = m.len;
    uint64_t addr      = m.remote_addr;
    uint32_t remote_op = m.remote_op;
    o->remote_addr     = addr;
    o->remote_op       = remote_op;
    o->remote_gen      = m.remote_gen;
    o->bytes           = len;
    o->done            = 0;
    if (ps.failed) {
        complete(o, LOOM_ERR_PEER_FAILURE, 0);
        return;
    }
    if (ps.cma) {
        int err = cma_read(ps.pid, o->buf, addr, len);
        if (err == 0) {
            finish_pull(ps, o);
            return;
        }
        if (err == EFAULT && !ack(ps, remote_op, m.remote_gen, LOOM_ERR_SYSTEM)) {
            // The sender withdrew the message and gave its buffer back while we read it.
            o->withdrawn = true;
            complete(o, LOOM_ERR_PEER_FAILURE, 0);
            return;
        }
        if (err != EPERM && err != ENOSYS) {
            // ESRCH: the sender is gone. Anything else: its buffer is not readable as
            // described, which the sender learns through the ack as well.
            LOOM_LOG_WARN(log::subsystem::net,
                          "shm: rank %d: process_vm_readv of %zu bytes from rank %d (tag %#llx) "
                          "failed: %s",
                          config_.rank, size_t(len), ps.rank, (unsigned long long)o->tag,
                          std::strerror(err));
            if (err != EFAULT) {
                ack(ps, remote_op, m.remote_gen, LOOM_ERR_SYSTEM);
            }
            complete(o, err == ESRCH ? LOOM_ERR_PEER_FAILURE : LOOM_ERR_SYSTEM, 0);
            return;
        }
        // Permission withdrawn after the probe (a security module, a setuid peer): use the
        // bounce channel for this peer from now on, and say so in caps.
        ps.cma       = false;
        single_copy_ = false;
        LOOM_LOG_INFO(log::subsystem::net,
                      "shm: rank %d: CMA from rank %d refused (%s); switching to the bounce "
                      "buffer",
                      config_.rank, ps.rank, std::strerror(err));
    }
    o->state = op_state::pull_queued;
    ps.pulls.push_back(o);
}

// The sender's side: RTS sends whose receiver has written the ack word complete.
void shm_endpoint::check_acks(peer_state& ps) {
    std::atomic<uint64_t>* acks = own_.acks();
    for (op* o = ps.await_ack.front(); o != nullptr;) {
        op* next       = o->next;
        uint64_t w     = acks[o->index].load(std::memory_order_acquire);  // A6
        uint32_t state = ack_word::state_of(w);
        bool answered  = ack_word::gen_of(w) == o->gen && state != ack_word::pending &&
                        state != ack_word::revoked;
        if (o != ps.bounce_send && answered) {
            ps.await_ack.remove(o);
            if (o->cancelled) {
                match_.release(o);
            } else {
                complete(o, LOOM_SUCCESS, o->len);
            }
        }
        o = next;
    }
}

// The sender's side of the bounce channel: take the receiver's request, then copy as much
// of the message as the channel has room for.
void shm_endpoint::progress_bounce_send(peer_state& ps) {
    if (ps.bounce_send == nullptr) {
        uint64_t n = ps.out_chan->requests.load(std::memory_order_acquire);  // A3
        if (n == ps.requests_seen) {
            return;
        }
        ps.requests_seen = n;
        uint32_t idx     = ps.out_chan->request_op.load(std::memory_order_relaxed);  // after A3
        op* o            = match_.at(idx);
        if (o == nullptr || o->idle || o->state != op_state::await_ack || o->peer != ps.rank) {
            LOOM_LOG_ERROR(log::subsystem::net,
                           "shm: rank %d: bounce request from rank %d names op %u, which is not "
                           "a rendezvous send to it",
                           config_.rank, ps.rank, idx);
            return;
        }
        ps.bounce_send = o;
        o->done        = 0;
    }
    op* o             = ps.bounce_send;
    uint64_t consumed = ps.out_chan->consumed.load(std::memory_order_acquire);  // A4
    uint64_t before   = ps.produced;
    while (o->done < o->len) {
        uint64_t space = ps.out_bytes - (ps.produced - consumed);
        if (space == 0) {
            break;
        }
        uint64_t at  = ps.produced & (ps.out_bytes - 1);
        size_t chunk = size_t(std::min({space, uint64_t(o->len - o->done), ps.out_bytes - at}));
        if (o->buf != nullptr) {  // null: revoked, the reader discards these bytes
            std::memcpy(ps.out_data + at, o->buf + o->done, chunk);
        }
        ps.produced += chunk;
        o->done += chunk;
    }
    if (ps.produced != before) {
        ps.out_chan->produced.store(ps.produced, std::memory_order_release);  // R5
        ring_if_asleep(ps.seg.header()->bell);
    }
    if (o->done == o->len) {
        ps.bounce_send = nullptr;  // all bytes handed over; the ack completes it
    }
}

// The receiver's side: one transfer at a time per peer, in the order the receives matched.
void shm_endpoint::progress_bounce_recv(peer_state& ps) {
    op* o = ps.pulls.front();
    if (o->state == op_state::pull_queued) {
        ps.in_chan->request_op.store(o->remote_op, std::memory_order_relaxed);      // before R3
        ps.in_chan->requests.store(++ps.requests_made, std::memory_order_release);  // R3
        ring_if_asleep(ps.seg.header()->bell);
        o->state = op_state::pulling;
    }
    uint64_t produced = ps.in_chan->produced.load(std::memory_order_acquire);  // A5
    uint64_t before   = ps.consumed;
    while (o->done < o->bytes && produced != ps.consumed) {
        uint64_t at  = ps.consumed & (ps.in_bytes - 1);
        size_t chunk = size_t(
            std::min({produced - ps.consumed, uint64_t(o->bytes - o->done), ps.in_bytes - at}));
        if (o->buf != nullptr) {  // null: cancelled, drained into nothing
            std::memcpy(o->buf + o->done, ps.in_data + at, chunk);
        }
        ps.consumed += chunk;
        o->done += chunk;
    }
    if (ps.consumed != before) {
        ps.in_chan->consumed.store(ps.consumed, std::memory_order_release);  // R4
        ring_if_asleep(ps.seg.header()->bell);
    }
    if (o->done == o->bytes) {
        ps.pulls.remove(o);
        finish_pull(ps, o);
    }
}

}  // namespace loom::drivers::shm
