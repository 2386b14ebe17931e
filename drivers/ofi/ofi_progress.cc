// SPDX-License-Identifier: Apache-2.0
// The ofi endpoint's progress: the completion queue, the handlers of each message kind,
// internal messages waiting for a send buffer, reads waiting to start, peer failure.
#include <cstring>

#include "base/clock.hh"
#include "base/log.hh"
#include "drivers/ofi/ofi.hh"

namespace loom::drivers::ofi {
namespace {

constexpr int cq_batch = 32;
// A peer with operations waiting on it that sent nothing for this long is probed.
constexpr double ping_after_s = 0.25;
// Sends to a silent peer refused (-FI_EAGAIN) this long: the peer is gone (a live one that
// is merely busy polls again well within this).
constexpr double stuck_s = 5.0;

}  // namespace

wire_header ofi_endpoint::header(msg_kind kind, uint64_t tag, uint64_t imm, uint64_t len,
                                 uint32_t id) const {
    wire_header h{};
    h.tag  = tag;
    h.imm  = imm;
    h.len  = len;
    h.kind = uint32_t(kind);
    h.src  = uint32_t(config_.rank);
    h.id   = id;
    return h;
}

bool ofi_endpoint::inject_eager(int to, const wire_header& h, const void* payload, size_t len) {
    size_t bytes = header_bytes + len;
    if (bytes > inject_limit_ || outgoing_head_ < outgoing_.size()) {
        return false;  // too large for the provider's inline path, or behind what waits
    }
    char staged[header_bytes + max_inject_payload];
    std::memcpy(staged, &h, header_bytes);
    if (len > 0) {
        std::memcpy(staged + header_bytes, payload, len);
    }
    // -FI_EAGAIN (a full queue, a connection being made) or an error: the queued path
    // retries it, or reports it on the send buffer's completion.
    return fi_tinject(fabric_->ep(), staged, bytes, peers_[size_t(to)].addr, 0) == 0;
}

int ofi_endpoint::send_header(int to, const wire_header& h, const void* payload, size_t len) {
    int32_t buffer = -1;
    if (!free_sends_.empty()) {
        buffer = int32_t(free_sends_.back());
        free_sends_.pop_back();
        char* b = send_block_.at(uint32_t(buffer));
        std::memcpy(b, &h, header_bytes);
        if (len > 0) {
            std::memcpy(b + header_bytes, payload, len);
        }
        send_peer_[uint32_t(buffer)] = to;
    } else if (len > 0) {
        return -FI_EAGAIN;  // a payload needs a buffer now: the caller's buffer is not ours
    }
    // Behind what already waits, in order (a goodbye must not overtake a message).
    outgoing_.push_back(outgoing{to, buffer, header_bytes + len, h});
    flush_outgoing();
    return 0;
}

void ofi_endpoint::send_internal(int to, msg_kind kind, uint64_t tag, uint64_t imm, uint32_t id,
                                 uint64_t addr) {
    wire_header h = header(kind, tag, imm, 0, id);
    h.addr        = addr;
    (void)send_header(to, h, nullptr, 0);
}

// Sends what waits, oldest first, until a send buffer or the provider's queue runs out
// (-FI_EAGAIN: a connection still being made, a full queue).
void ofi_endpoint::flush_outgoing() {
    while (outgoing_head_ < outgoing_.size()) {
        outgoing& g = outgoing_[outgoing_head_];
        peer& p     = peers_[size_t(g.peer)];
        if (p.failed) {
            if (g.buffer >= 0) {
                free_sends_.push_back(uint32_t(g.buffer));
            }
            ++outgoing_head_;
            continue;
        }
        if (g.buffer < 0) {
            if (free_sends_.empty()) {
                return;
            }
            g.buffer = int32_t(free_sends_.back());
            free_sends_.pop_back();
            std::memcpy(send_block_.at(uint32_t(g.buffer)), &g.h, header_bytes);
            send_peer_[uint32_t(g.buffer)] = g.peer;
        }
        uint32_t i = uint32_t(g.buffer);
        ssize_t rc = fi_tsend(fabric_->ep(), send_block_.at(i), g.bytes, send_block_.desc, p.addr,
                              0, &send_ctx_[i]);
        if (rc == -FI_EAGAIN) {
            if (p.stuck_since == 0) {
                p.stuck_since = now_s();  // check_liveness judges how long
            }
            return;
        }
        p.stuck_since = 0;
        ++outgoing_head_;
        if (rc != 0) {
            free_sends_.push_back(i);
            fail_peer(p, "sending: " + error_text(int(rc)));
        }
    }
    outgoing_.clear();
    outgoing_head_ = 0;
}

void ofi_endpoint::repost_buffer(uint32_t i) {
    ssize_t rc = fi_trecv(fabric_->ep(), recv_block_.at(i), recv_block_.each, recv_block_.desc,
                          FI_ADDR_UNSPEC, 0, ~direct_tag_bit, &recv_ctx_[i]);
    if (rc != 0) {
        repost_.push_back(i);  // -FI_EAGAIN: after the queue moves
    }
}

void ofi_endpoint::complete_op(op* o, loom_status_t st, size_t bytes) {
    o->state = op_state::idle;
    if (o->mr != nullptr) {
        cache_.release(o->mr);
        o->mr = nullptr;
    }
    if (o->cancelled) {
        match_.release(o);  // its caller has moved on
        return;
    }
    match_.complete(o, st, bytes);
}

op* ofi_endpoint::op_of(uint32_t id, const wire_header& h) {
    op* o = match_.at(id);
    if (o == nullptr || o->idle || !o->is_send || o->tag != h.tag) {
        return nullptr;
    }
    return o;
}

void ofi_endpoint::fail_peer(peer& p, const std::string& why, bool graceful) {
    if (p.failed) {
        return;
    }
    p.failed = true;
    p.error  = status(LOOM_ERR_PEER_FAILURE, "ofi: rank " + std::to_string(config_.rank) +
                                                 ": peer " + std::to_string(p.rank) + ": " + why);
    if (graceful) {
        LOOM_LOG_DEBUG(log::subsystem::net, "%s", p.error.message().c_str());
    } else {
        LOOM_LOG_WARN(log::subsystem::net, "%s", p.error.message().c_str());
    }
    while (op* o = p.match.posted.pop_front()) {
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
    }
    while (op* o = p.active.pop_front()) {
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
    }
    for (op* o = waiting_.front(); o != nullptr;) {
        op* next = o->next;
        if (o->peer == p.rank) {
            waiting_.remove(o);
            complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
        }
        o = next;
    }
    // Early eager payloads that came whole stay deliverable; announced buffers do not.
    for (early* e = p.match.early.front(); e != nullptr;) {
        early* next = e->next;
        if (e->kind != msg_kind::eager) {
            p.match.early.remove(e);
            earlies_.put(e);
        }
        e = next;
    }
}

void ofi_endpoint::match_rendezvous(peer& p, op* o, uint64_t imm, uint64_t len, uint64_t addr,
                                    uint64_t key, uint32_t send_id) {
    if (len != o->len || imm != o->imm) {
        match_.complete_mismatch(o, imm);
        o->state = op_state::idle;
        send_internal(p.rank, msg_kind::nack, o->tag, imm, send_id);
        return;
    }
    o->imm         = imm;
    o->remote_addr = addr;
    o->remote_key  = key;
    o->remote_id   = send_id;
    start_transfer(p, o);
}

// Starts the read (or, without RMA, the direct receive and its CTS) of receive `o`; one
// that cannot start yet (no registration free, queue full) waits in waiting_.
void ofi_endpoint::start_transfer(peer& p, op* o) {
    void* desc = nullptr;
    if (fabric_->needs_local_mr() && o->mr == nullptr) {
        auto r = cache_.acquire(o->buf, o->len);
        if (!r) {
            o->state = op_state::awaiting_start;
            waiting_.push_back(o);
            return;
        }
        o->mr = *r;
    }
    if (o->mr != nullptr) {
        desc = fi_mr_desc(o->mr->handle);
    }
    ssize_t rc;
    if (o->is_send) {
        rc = fi_tsend(fabric_->ep(), o->buf, o->len, desc, p.addr, o->remote_addr, &o->ctx);
        if (rc == 0) {
            o->state = op_state::direct_send;
        }
    } else if (rma_) {
        rc = fi_read(fabric_->ep(), o->buf, o->len, desc, p.addr, o->remote_addr, o->remote_key,
                     &o->ctx);
        if (rc == 0) {
            o->state = op_state::reading;
        }
    } else {
        o->gen        = ++gen_;
        uint64_t dtag = direct_tag_bit | (uint64_t(o->gen & 0x7fffffff) << 32) | o->ctx.index;
        rc            = fi_trecv(fabric_->ep(), o->buf, o->len, desc, p.addr, dtag, 0, &o->ctx);
        if (rc == 0) {
            o->state = op_state::direct_recv;
            send_internal(p.rank, msg_kind::cts, o->tag, o->imm, o->remote_id, dtag);
        }
    }
    if (rc == -FI_EAGAIN) {
        o->state = op_state::awaiting_start;
        waiting_.push_back(o);
        return;
    }
    if (rc != 0) {
        p.active.push_back(o);
        fail_peer(p, std::string(o->is_send ? "fi_tsend"
                                 : rma_     ? "fi_read"
                                            : "fi_trecv") +
                         ": " + error_text(int(rc)));
        return;
    }
    p.active.push_back(o);
}

void ofi_endpoint::start_waiting() {
    size_t n = waiting_.size();
    for (size_t k = 0; k < n; ++k) {
        op* o = waiting_.pop_front();
        start_transfer(peers_[size_t(o->peer)], o);
        if (o->state == op_state::awaiting_start) {
            return;  // still blocked: the rest wait behind it
        }
    }
}

// A read (or direct receive) into receive `o` finished.
void ofi_endpoint::finish_read(op* o, bool ok) {
    peer& p = peers_[size_t(o->peer)];
    p.active.remove(o);
    if (!ok) {
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
        fail_peer(p, "reading a rendezvous message failed");
        return;
    }
    bool revoked = o->revoked;
    if (rma_) {
        send_internal(p.rank, revoked ? msg_kind::revoke_ack : msg_kind::fin, o->tag, o->imm,
                      o->remote_id);
    }
    if (revoked) {
        o->withdrawn = true;
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
    } else {
        complete_op(o, LOOM_SUCCESS, o->len);
    }
}

early* ofi_endpoint::keep_early(peer& p, const wire_header& h, msg_kind kind) {
    early* e = earlies_.take();
    if (e == nullptr) {
        return nullptr;
    }
    // No receive has the tag: one of the same call expecting another immediate is a mismatch.
    if (op* c = p.match.take_posted_contradicting(h.tag, h.imm)) {
        c->state = op_state::idle;
        match_.complete_mismatch(c, h.imm);
    }
    e->tag  = h.tag;
    e->imm  = h.imm;
    e->len  = h.len;
    e->kind = kind;
    return e;
}

bool ofi_endpoint::handle_eager(peer& p, const wire_header& h, const char* payload) {
    if (op* o = p.match.take_posted(h.tag)) {
        if (h.len != o->len || h.imm != o->imm) {
            o->state = op_state::idle;
            match_.complete_mismatch(o, h.imm);
        } else {
            if (h.len != 0) {  // an empty receive may have no buffer
                std::memcpy(o->buf, payload, h.len);
            }
            complete_op(o, LOOM_SUCCESS, h.len);
        }
        return true;
    }
    early* e = keep_early(p, h, msg_kind::eager);
    if (e == nullptr) {
        return false;
    }
    if (h.len != 0) {  // an entry that never held bytes has no storage
        if (e->payload.size() < h.len) {
            e->payload.resize(h.len);  // once per entry and size: the pool's high-water mark
        }
        std::memcpy(e->payload.data(), payload, h.len);
    }
    p.match.early.push_back(e);
    return true;
}

bool ofi_endpoint::handle_rts(peer& p, const wire_header& h) {
    if (op* o = p.match.take_posted(h.tag)) {
        match_rendezvous(p, o, h.imm, h.len, h.addr, h.key, h.id);
        return true;
    }
    early* e = keep_early(p, h, msg_kind::rts);
    if (e == nullptr) {
        return false;
    }
    e->addr    = h.addr;
    e->key     = h.key;
    e->send_id = h.id;
    p.match.early.push_back(e);
    return true;
}

void ofi_endpoint::handle_answer(peer& p, const wire_header& h) {
    op* s = op_of(h.id, h);
    if (s == nullptr || s->state != op_state::awaiting_fin) {
        return;  // a late answer (the operation failed, or its data is on its way)
    }
    p.active.remove(s);
    complete_op(s, LOOM_SUCCESS, s->len);
}

void ofi_endpoint::handle_cts(peer& p, const wire_header& h) {
    op* s = op_of(h.id, h);
    if (s == nullptr || s->state != op_state::awaiting_fin || s->cancelled) {
        return;  // a cancelled send: the receiver takes back its receive on REVOKE
    }
    p.active.remove(s);
    s->remote_addr = h.addr;  // the receive's libfabric tag
    start_transfer(p, s);
}

void ofi_endpoint::handle_revoke(peer& p, const wire_header& h) {
    for (op* o = p.active.front(); o != nullptr; o = o->next) {
        if (!o->is_send && o->remote_id == h.id && o->tag == h.tag) {
            if (o->state == op_state::reading) {
                o->revoked = true;  // answered when the read ends
                return;
            }
            if (o->state == op_state::direct_recv) {
                o->revoked = true;  // answered when the cancelled receive comes back
                fi_cancel(&fabric_->ep()->fid, &o->ctx);
                return;
            }
        }
    }
    for (op* o = waiting_.front(); o != nullptr; o = o->next) {
        if (o->peer == p.rank && o->remote_id == h.id && o->tag == h.tag) {
            waiting_.remove(o);
            o->withdrawn = true;
            complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
            break;
        }
    }
    for (early* e = p.match.early.front(); e != nullptr; e = e->next) {
        if (e->kind == msg_kind::rts && e->send_id == h.id && e->tag == h.tag) {
            p.match.early.remove(e);
            earlies_.put(e);
            break;
        }
    }
    send_internal(p.rank, msg_kind::revoke_ack, h.tag, h.imm, h.id);
}

bool ofi_endpoint::handle_message(uint32_t buffer, size_t len) {
    const char* b = recv_block_.at(buffer);
    wire_header h;
    std::memcpy(&h, b, header_bytes);
    if (len < header_bytes || h.src >= peers_.size() || !peers_[h.src].connected) {
        return true;  // not ours: dropped
    }
    peer& p = peers_[h.src];
    if (p.failed) {
        return true;
    }
    p.last_heard = now_s();
    p.heard      = true;
    switch (msg_kind(h.kind)) {
        case msg_kind::eager:
            if (len != header_bytes + h.len) {
                fail_peer(p, "malformed eager message: " + std::to_string(len) + " bytes came, " +
                                 std::to_string(header_bytes + h.len) + " announced");
                return true;
            }
            return handle_eager(p, h, b + header_bytes);
        case msg_kind::rts:
            return handle_rts(p, h);
        case msg_kind::fin:
        case msg_kind::nack:
        case msg_kind::revoke_ack:
            handle_answer(p, h);
            return true;
        case msg_kind::cts:
            handle_cts(p, h);
            return true;
        case msg_kind::revoke:
            handle_revoke(p, h);
            return true;
        case msg_kind::control: {
            op* o = match_.take(p.rank, h.tag, h.imm, nullptr, 0, control_cookie);
            if (o == nullptr) {
                return false;
            }
            o->is_send = false;
            complete_op(o, LOOM_SUCCESS, 0);
            return true;
        }
        case msg_kind::bye:
            fail_peer(p, "peer " + std::to_string(p.rank) + " closed its endpoint", true);
            return true;
        case msg_kind::ping:
            return true;
    }
    fail_peer(p, "unknown message kind " + std::to_string(h.kind));
    return true;
}

void ofi_endpoint::handle_cq_entry(const fi_cq_tagged_entry& e) {
    auto* c = static_cast<ofi_ctx*>(e.op_context);
    if (c == nullptr) {
        return;
    }
    switch (c->kind) {
        case ctx_kind::send_buffer:
            free_sends_.push_back(c->index);
            return;
        case ctx_kind::recv_buffer:
            if (!held_.empty() || !handle_message(c->index, e.len)) {
                held_.push_back({c->index, e.len});  // in order, behind those held
                return;
            }
            repost_buffer(c->index);
            return;
        case ctx_kind::op: {
            op* o = match_.at(c->index);
            if (o->is_send) {  // a direct send (no RMA) went
                peers_[size_t(o->peer)].active.remove(o);
                complete_op(o, LOOM_SUCCESS, o->len);
            } else {
                finish_read(o, true);
            }
            return;
        }
    }
}

// A direct receive (no RMA) taken back with fi_cancel: by its own cancel (the sender still
// waits for an answer) or by the sender's revoke.
void ofi_endpoint::cancelled_direct_recv(op* o) {
    peer& p = peers_[size_t(o->peer)];
    p.active.remove(o);
    if (o->revoked) {
        send_internal(p.rank, msg_kind::revoke_ack, o->tag, o->imm, o->remote_id);
        o->withdrawn = true;
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
    } else {
        send_internal(p.rank, msg_kind::nack, o->tag, o->imm, o->remote_id);
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);  // cancelled: released silently
    }
}

void ofi_endpoint::handle_cq_error() {
    fi_cq_err_entry err{};
    if (fi_cq_readerr(fabric_->cq(), &err, 0) != 1) {
        return;
    }
    auto* c = static_cast<ofi_ctx*>(err.op_context);
    if (c == nullptr) {
        return;
    }
    if (err.err == FI_ECANCELED) {
        if (c->kind == ctx_kind::op) {
            cancelled_direct_recv(match_.at(c->index));
        }
        return;
    }
    char detail[256] = {};
    fi_cq_strerror(fabric_->cq(), err.prov_errno, err.err_data, detail, sizeof detail);
    std::string why = error_text(err.err) + (detail[0] != 0 ? std::string(": ") + detail : "");
    switch (c->kind) {
        case ctx_kind::send_buffer: {
            free_sends_.push_back(c->index);
            int to = send_peer_[c->index];
            if (to >= 0) {
                fail_peer(peers_[size_t(to)], "send failed: " + why);
            }
            return;
        }
        case ctx_kind::recv_buffer:
            repost_buffer(c->index);  // truncated or stray: the buffer serves on
            return;
        case ctx_kind::op: {
            op* o   = match_.at(c->index);
            peer& p = peers_[size_t(o->peer)];
            if (o->is_send) {
                p.active.remove(o);
                complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
                fail_peer(p, "large send failed: " + why);
            } else if (o->revoked) {
                finish_read(o, true);  // the sender revoked its buffer: withdrawn
            } else {
                p.active.remove(o);
                complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
                fail_peer(p, "reading a large message failed: " + why);
            }
            return;
        }
    }
}

void ofi_endpoint::check_liveness() {
    double now = now_s();
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        // A rendezvous waits on the peer: soon. Only receives: rarely (a ping wakes a peer
        // that sleeps on its endpoint).
        double after = !p.active.empty() ? ping_after_s : p.match.posted.empty() ? -1 : 2.0;
        if (p.failed || after < 0 || now - p.last_heard < after || now - p.last_ping < after ||
            p.stuck_since != 0) {
            continue;
        }
        p.last_ping = now;
        send_internal(r, msg_kind::ping, 0, 0, 0);
    }
    // A peer whose messages the provider keeps refusing (a connection it cannot make again:
    // the process is gone) and that sent nothing meanwhile has failed.
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (!p.failed && p.stuck_since != 0 && now - p.stuck_since > stuck_s &&
            now - p.last_heard > stuck_s) {
            fail_peer(p, "unreachable: nothing could be sent to it for " +
                             std::to_string(int(stuck_s)) + " s, and it sent nothing");
        }
    }
}

void ofi_endpoint::progress() {
    fi_cq_tagged_entry entries[cq_batch];
    for (int round = 0; round < 4; ++round) {
        ssize_t n = fi_cq_read(fabric_->cq(), entries, cq_batch);
        if (n == -FI_EAVAIL) {
            handle_cq_error();
            continue;
        }
        if (n <= 0) {
            break;
        }
        for (ssize_t i = 0; i < n; ++i) {
            handle_cq_entry(entries[i]);
        }
        if (n < cq_batch) {
            break;
        }
    }
    // Held receive buffers, oldest first, as early entries come back.
    size_t k = 0;
    while (k < held_.size() && handle_message(held_[k].first, held_[k].second)) {
        repost_buffer(held_[k].first);
        ++k;
    }
    if (k > 0) {
        held_.erase(held_.begin(), held_.begin() + long(k));
    }
    if (!repost_.empty()) {
        size_t n = repost_.size();
        for (size_t i = 0; i < n; ++i) {
            uint32_t b = repost_[i];
            repost_buffer(b);
        }
        repost_.erase(repost_.begin(), repost_.begin() + long(n));
    }
    flush_outgoing();
    if (!waiting_.empty()) {
        start_waiting();
    }
    if ((++polls_ & 255) == 0) {
        check_liveness();
    }
}

int ofi_endpoint::poll(completion* out, int max) {
    if (closed_) {
        return match_.harvest(out, max);
    }
    progress();
    int n = match_.harvest(out, max);
    if (n < max) {
        n += loop_->poll(out + n, max - n);
    }
    return n;
}

}  // namespace loom::drivers::ofi
