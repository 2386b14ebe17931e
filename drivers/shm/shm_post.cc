// SPDX-License-Identifier: Apache-2.0
// shm fast path, posting side: post_send / post_recv, matching by (peer, tag), and the
// per-peer pool of early arrivals. No allocation, lock or system call here: ops and early
// buffers come from pools sized at connect.
#include <cstring>

#include "drivers/shm/shm.hh"

namespace loom::drivers::shm {

// Writes `o` into the reserved ring `slot` and publishes it: eager messages complete at
// once (the bytes are in the peer's ring), rendezvous sends wait for the receiver's ack.
void shm_endpoint::write_send(peer_state& ps, op* o, char* slot) {
    slot_header h{};
    h.tag = o->tag;
    h.imm = o->imm;
    h.seq = ps.send_seq++;
    h.len = o->len;
    if (o->len <= ps.eager_limit) {
        h.kind = uint16_t(msg_kind::eager);
        std::memcpy(slot, &h, sizeof(h));
        if (o->len > 0) {
            std::memcpy(slot + sizeof(h), o->buf, o->len);
        }
        ps.out.publish();  // R1 (shm_ring.hh): header and payload before the index
        ring_if_asleep(ps.seg.header()->bell);
        complete(o, LOOM_SUCCESS, o->len);
        return;
    }
    h.kind   = uint16_t(msg_kind::rts);
    h.addr   = reinterpret_cast<uintptr_t>(o->buf);
    h.op     = o->index;
    h.op_gen = ++o->gen;
    std::memcpy(slot, &h, sizeof(h));
    // Relaxed is enough: R1 below orders this reset before the RTS becomes visible, so the
    // receiver's ack (R6) comes later in this word's modification order.
    own_.acks()[o->index].store(ack_word::make(o->gen, ack_word::pending),
                                std::memory_order_relaxed);
    o->state = op_state::await_ack;
    ps.await_ack.push_back(o);
    ps.out.publish();  // R1
    ring_if_asleep(ps.seg.header()->bell);
}

// A control notice takes one slot and no op: it produces no send completion (its cookie
// would read as an incoming notice), and a full ring refuses it (best effort, driver.hh).
loom_status_t shm_endpoint::send_control(peer_state& ps, uint64_t tag, uint64_t imm) {
    if (ps.failed) {
        return LOOM_ERR_PEER_FAILURE;
    }
    char* slot = ps.out.try_reserve();
    if (slot == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    slot_header h{};
    h.tag  = tag;
    h.imm  = imm;
    h.seq  = ps.send_seq++;
    h.kind = uint16_t(msg_kind::control);
    std::memcpy(slot, &h, sizeof(h));
    ps.out.publish();  // R1
    ring_if_asleep(ps.seg.header()->bell);
    return LOOM_SUCCESS;
}

loom_status_t shm_endpoint::post_send(int peer, uint64_t tag, uint64_t imm, const void* buf,
                                      size_t len, uint64_t cookie) {
    bool control = (tag & control_tag_bit) != 0;
    if (!connected_ || closed_ || (buf == nullptr && len > 0 && !control)) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (peer == config_.rank) {
        return loop_.post_send(tag, imm, buf, len, cookie);
    }
    if (peer < 0 || peer >= config_.size || !peers_[peer].connected) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer_state& ps = peers_[peer];
    if (control) {
        return send_control(ps, tag, imm);
    }
    op* o = match_.take(peer, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    o->kind = op_kind::send;
    if (ps.failed) {
        complete(o, LOOM_ERR_PEER_FAILURE, 0);
        return LOOM_SUCCESS;
    }
    // Sends to one peer enter its ring in posting order: once one waits, later ones queue.
    if (ps.queued.empty()) {
        if (char* slot = ps.out.try_reserve(); slot != nullptr) {
            write_send(ps, o, slot);
            return LOOM_SUCCESS;
        }
    }
    o->state = op_state::queued;
    ps.queued.push_back(o);
    return LOOM_SUCCESS;
}

loom_status_t shm_endpoint::post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                                      uint64_t cookie) {
    if (!connected_ || closed_ || (buf == nullptr && len > 0) || (tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;  // control tags are never matched
    }
    if (peer == config_.rank) {
        return loop_.post_recv(tag, imm, buf, len, cookie);
    }
    if (peer < 0 || peer >= config_.size || !peers_[peer].connected) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer_state& ps = peers_[peer];
    op* o          = match_.take(peer, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    o->kind = op_kind::recv;
    if (early_msg* m = ps.match.take_early(tag); m != nullptr) {
        deliver(ps, o, *m);
        ps.early_pool.put(m);  // may let a back-pressured ring move again
        return LOOM_SUCCESS;
    }
    if (const early_msg* m = ps.match.early_contradicting(tag, imm); m != nullptr) {
        match_.complete_mismatch(o, m->imm);  // the message stays: nothing of it is delivered
        return LOOM_SUCCESS;
    }
    if (ps.failed) {
        complete(o, LOOM_ERR_PEER_FAILURE, 0);
        return LOOM_SUCCESS;
    }
    o->state = op_state::posted;
    ps.match.posted.push_back(o);
    return LOOM_SUCCESS;
}

// Receive `o` (out of every list) meets its message `m`, from the ring or the early pool.
// The header decides first: another length or immediate is a mismatch, and nothing is
// copied (driver.hh).
void shm_endpoint::deliver(peer_state& ps, op* o, const early_msg& m) {
    if (m.len != o->len || m.imm != o->imm) {
        if (m.kind == msg_kind::rts) {
            ack(ps, m.remote_op, m.remote_gen, LOOM_ERR_MISMATCH);  // its buffer is free again
        }
        match_.complete_mismatch(o, m.imm);
        return;
    }
    if (m.kind == msg_kind::rts) {
        start_pull(ps, o, m);
        return;
    }
    if (m.len > 0) {
        std::memcpy(o->buf, m.data, m.len);
    }
    complete(o, LOOM_SUCCESS, m.len);
}

// A message at the head of the peer's ring: hand it to its receive, or keep it as an early
// arrival. False when the pool it needs is empty: the slot stays in the ring
// (back-pressure) and the sender's later messages wait behind it.
bool shm_endpoint::accept_message(peer_state& ps, const slot_header& h, const char* payload) {
    if (h.kind == uint16_t(msg_kind::control)) {
        // Unsolicited: it needs an op to sit in the completion list until poll hands it out.
        op* o = match_.take(ps.rank, h.tag, h.imm, nullptr, 0, control_cookie);
        if (o == nullptr) {
            return false;
        }
        complete(o, LOOM_SUCCESS, 0);
        return true;
    }
    early_msg in_ring{.tag         = h.tag,
                      .imm         = h.imm,
                      .len         = h.len,
                      .remote_addr = h.addr,
                      .remote_op   = h.op,
                      .remote_gen  = h.op_gen,
                      .kind = h.kind == uint16_t(msg_kind::eager) ? msg_kind::eager : msg_kind::rts,
                      .data = const_cast<char*>(payload)};
    if (op* o = ps.match.take_posted(h.tag); o != nullptr) {
        deliver(ps, o, in_ring);
        return true;
    }
    // A message of the same call with another signature: the calls differ across ranks.
    if (op* o = ps.match.take_posted_contradicting(h.tag, h.imm); o != nullptr) {
        match_.complete_mismatch(o, h.imm);
    }
    early_msg* m = ps.early_pool.take();
    if (m == nullptr) {
        return false;
    }
    char* keep = m->data;
    *m         = in_ring;
    m->data    = keep;
    if (m->kind == msg_kind::eager && m->len > 0) {
        std::memcpy(m->data, payload, m->len);
    }
    ps.match.early.push_back(m);
    return true;
}

// driver.hh cancel. Not the hot path: a scan of the op pool.
bool shm_endpoint::cancel(uint64_t cookie) {
    if (loop_.cancel(cookie)) {
        return true;
    }
    op* o = match_.find_pending(cookie);
    if (o == nullptr) {
        return false;
    }
    peer_state& ps = peers_[o->peer];
    switch (o->state) {
        case op_state::posted:
        case op_state::queued:
            (o->state == op_state::posted ? ps.match.posted : ps.queued).remove(o);
            match_.release(o);
            break;
        case op_state::await_ack: {
            // Revoke, unless the receiver's ack won the race (then the send is simply over).
            // A revoked op stays listed until the receiver says it is done with it, so its
            // ack word is not reused under a reader; a bounce stream in progress runs on
            // without our bytes, which the reader will discard.
            uint64_t expect = ack_word::make(o->gen, ack_word::pending);
            if (own_.acks()[o->index].compare_exchange_strong(
                    expect, ack_word::make(o->gen, ack_word::revoked), std::memory_order_acq_rel)) {
                o->cancelled = true;
                o->buf       = nullptr;
            } else {
                if (ps.bounce_send == o) {
                    ps.bounce_send = nullptr;
                }
                ps.await_ack.remove(o);
                match_.release(o);
            }
            break;
        }
        case op_state::pull_queued:
            ps.pulls.remove(o);
            ack(ps, o->remote_op, o->remote_gen, LOOM_ERR_PEER_FAILURE);  // frees the sender
            match_.release(o);
            break;
        case op_state::pulling:
            // The sender is streaming this message through the channel: drain it into
            // nothing (progress_bounce_recv), so the channel stays in step.
            o->cancelled = true;
            o->buf       = nullptr;
            break;
    }
    return true;
}

}  // namespace loom::drivers::shm
