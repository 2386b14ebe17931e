// Delivery at the destination of the forwarding wrapper (forward_endpoint.hh): incoming
// messages matched to posted receives by (source, tag), whichever came first; the
// mismatch rule of driver.hh decided from a message's first header; payloads that arrive
// before their receive read into early buffers; what a mismatch or a cancel leaves drained.
#include <algorithm>
#include <cstring>

#include "drivers/forward/forward_endpoint.hh"

namespace loom::drivers::forward {

// Keeps open_recvs_ in posting order (matching takes the first that fits), without
// allocating: erase shifts within the reserved array.
void forward_endpoint::unlist_recv(int i) {
    if (!ops_[size_t(i)].listed) {
        return;
    }
    user_op& o = ops_[size_t(i)];
    o.listed   = false;
    open_recvs_.erase(std::find(open_recvs_.begin(), open_recvs_.end(), i));
    recv_index_.erase(
        recv_index_.find_if(o.peer, common::dir::recv, o.tag,
                            [i](const common::ref_entry& e) { return e.cookie == uint64_t(i); }));
}

void forward_endpoint::unlist_msg(int mi) {
    auto at = std::find(live_msgs_.begin(), live_msgs_.end(), mi);
    *at     = live_msgs_.back();
    live_msgs_.pop_back();
    msg_index_.erase(msg_entry(mi));
}

common::ref_entry* forward_endpoint::msg_entry(int mi) {
    const in_msg& m = msgs_[size_t(mi)];
    return msg_index_.find_if(m.src, common::dir::recv, m.tag, [mi](const common::ref_entry& e) {
        return e.cookie == uint64_t(mi);
    });
}

// Message m has its receive, or drains: no later receive may match it.
void forward_endpoint::msg_taken(int mi) {
    msg_entry(mi)->state = common::entry_state::awaiting_data;
}

int forward_endpoint::take_early() {
    if (free_early_.empty()) {
        early_store_.push_back(std::make_unique_for_overwrite<uint8_t[]>(cfg_.chunk));
        return int(early_store_.size()) - 1;
    }
    int e = free_early_.back();
    free_early_.pop_back();
    return e;
}

void forward_endpoint::park(int mi, uint32_t c) {
    in_msg& m       = msgs_[size_t(mi)];
    chunks_[c].next = -1;
    if (m.parked_tail >= 0) {
        chunks_[size_t(m.parked_tail)].next = int(c);
    } else {
        m.parked_head = int(c);
    }
    m.parked_tail = int(c);
}

// Chunk c's payload is in at its destination (or failed, or was revoked on the way).
void forward_endpoint::arrived(uint32_t c, loom_status_t st, bool withdrawn) {
    chunk& k = chunks_[c];
    if (k.orphan) {
        free_chunk(c);  // the rest of a cancelled receive, caught in the sink
        return;
    }
    in_msg& m = msgs_[size_t(k.msg)];
    if (st != LOOM_SUCCESS && m.status == LOOM_SUCCESS) {
        m.status = st;
    }
    if ((k.h.flags & flag_withdrawn) != 0 && m.status == LOOM_SUCCESS) {
        m.status = LOOM_ERR_PEER_FAILURE;
    }
    m.withdrawn = m.withdrawn || withdrawn || (k.h.flags & flag_withdrawn) != 0;
    if (k.early >= 0) {
        if (m.rop < 0 && !m.drain) {
            k.state = ch_state::parked;  // landed early: waits for its receive
            park(k.msg, c);
            return;
        }
        if (!m.drain) {
            std::memcpy(ops_[size_t(m.rop)].dst + k.h.offset, early_data(k), k.h.len);
        }
    }
    m.done_bytes += k.h.len;
    int mi = k.msg;
    free_chunk(c);
    msg_progress(mi);
}

int forward_endpoint::find_msg(int src, uint64_t tag) {
    common::ref_entry* e = msg_index_.find(src, common::dir::recv, tag);
    return e != nullptr ? int(e->cookie) : -1;
}

// Completes the matched receive or frees a drained message once every byte arrived.
void forward_endpoint::msg_progress(int mi) {
    in_msg& m = msgs_[size_t(mi)];
    if (m.done_bytes < m.total || (m.rop < 0 && !m.drain)) {
        return;
    }
    if (m.rop >= 0) {
        completion c{0, m.status, m.src, m.total, m.tag, m.imm};
        c.withdrawn = m.withdrawn;
        finish(m.rop, c);
    }
    m.live        = false;
    m.parked_head = m.parked_tail = -1;
    unlist_msg(mi);
    free_msgs_.push_back(mi);
}

void forward_endpoint::drain_parked(int mi) {
    in_msg& m     = msgs_[size_t(mi)];
    int next      = m.parked_head;
    m.parked_head = m.parked_tail = -1;
    while (next >= 0) {
        auto c     = uint32_t(next);
        next       = chunks_[c].next;
        user_op* o = m.rop >= 0 ? &ops_[size_t(m.rop)] : nullptr;
        if (chunks_[c].h.len == 0) {
            free_chunk(c);
            continue;
        }
        if (chunks_[c].early >= 0) {  // landed early: copy out (unless drained) and done
            if (!m.drain && o != nullptr) {
                std::memcpy(o->dst + chunks_[c].h.offset, early_data(chunks_[c]), chunks_[c].h.len);
            }
            m.done_bytes += chunks_[c].h.len;
            free_chunk(c);
            continue;
        }
        start_rx(c, m.drain || o == nullptr ? sink_.get() : o->dst + chunks_[c].h.offset);
    }
}

// Receive r meets message m: matched, or a mismatch (receive completes, message drains).
void forward_endpoint::match(int mi, int r) {
    in_msg& m  = msgs_[size_t(mi)];
    user_op& o = ops_[size_t(r)];
    if (o.imm != m.imm || o.len != m.total) {
        finish(r, completion{0, LOOM_ERR_MISMATCH, m.src, size_t(m.total), m.tag, m.imm});
        m.drain = true;
    } else {
        m.rop = r;
        o.msg = mi;
        unlist_recv(r);
    }
    msg_taken(mi);
    drain_parked(mi);
    msg_progress(mi);
}

void forward_endpoint::deliver(uint32_t c) {
    chunk& k = chunks_[c];
    int mi   = find_msg(k.h.src, k.h.tag);
    if (mi < 0) {
        if (free_msgs_.empty()) {
            // Cannot happen: messages are bounded by chunks, which are bounded likewise.
            free_chunk(c);
            return;
        }
        mi = free_msgs_.back();
        free_msgs_.pop_back();
        in_msg& m     = msgs_[size_t(mi)];
        m.live        = true;
        m.src         = k.h.src;
        m.tag         = k.h.tag;
        m.imm         = k.h.imm;
        m.total       = k.h.total;
        m.rop         = -1;
        m.drain       = false;
        m.withdrawn   = false;
        m.status      = LOOM_SUCCESS;
        m.done_bytes  = 0;
        m.parked_head = m.parked_tail = -1;
        live_msgs_.push_back(mi);
        msg_index_.insert(m.src, common::dir::recv, m.tag, common::entry_state::early_eager)
            ->cookie = uint64_t(mi);
        k.msg        = mi;
        park(mi, c);
        k.state = ch_state::parked;
        if (common::ref_entry* r = recv_index_.find(m.src, common::dir::recv, m.tag)) {
            match(mi, int(r->cookie));
            return;
        }
        for (int r : open_recvs_) {  // the first receive of the same call, posting order
            const user_op& o = ops_[size_t(r)];
            if (o.peer == m.src && same_call_other_imm(o.tag, o.imm, m.tag, m.imm)) {
                finish(r, completion{0, LOOM_ERR_MISMATCH, m.src, size_t(m.total), m.tag, m.imm});
                break;
            }
        }
        read_early(mi);
        return;
    }
    in_msg& m = msgs_[size_t(mi)];
    k.msg     = mi;
    k.state   = ch_state::parked;
    park(mi, c);
    if (m.rop >= 0 || m.drain) {
        drain_parked(mi);
        msg_progress(mi);
    } else {
        read_early(mi);
    }
}

// A receive just posted (op i): its message may be here already, or a message of the same
// call with another immediate (a mismatch); else it waits in posting order.
void forward_endpoint::match_posted(int i) {
    user_op& o   = ops_[size_t(i)];
    int peer     = o.peer;
    uint64_t tag = o.tag;
    uint64_t imm = o.imm;
    if (common::ref_entry* e =
            msg_index_.find(peer, common::dir::recv, tag, common::entry_state::early_eager)) {
        match(int(e->cookie), i);
        return;
    }
    for (int m : live_msgs_) {
        const in_msg& x = msgs_[size_t(m)];
        if (x.src == peer && x.rop < 0 && !x.drain && same_call_other_imm(tag, imm, x.tag, x.imm)) {
            finish(i, completion{0, LOOM_ERR_MISMATCH, peer, size_t(x.total), x.tag, x.imm});
            return;
        }
    }
    o.listed = true;
    open_recvs_.push_back(i);
    recv_index_.insert(peer, common::dir::recv, tag, common::entry_state::posted)->cookie =
        uint64_t(i);
}

// Message m has no receive yet: read the payloads of its parked chunks into private
// buffers now, so that the upstream router's forwarding buffers are freed instead of
// waiting for the receive (a router blocked behind them may carry the traffic that the
// receive is waiting for). Bounded by the chunk entries (max_ops).
void forward_endpoint::read_early(int mi) {
    in_msg& m     = msgs_[size_t(mi)];
    int next      = m.parked_head;
    m.parked_head = m.parked_tail = -1;
    while (next >= 0) {
        auto c   = uint32_t(next);
        chunk& k = chunks_[c];
        next     = k.next;
        if (k.h.len == 0 || k.early >= 0) {
            park(mi, c);
            continue;
        }
        k.early = take_early();
        start_rx(c, early_data(k));
    }
}

// Cancel of receive op i: an unmatched one is simply withdrawn; a matched one drains the
// rest of its message.
void forward_endpoint::withdraw_recv(int i) {
    user_op& o  = ops_[size_t(i)];
    o.cancelled = true;
    if (o.msg < 0) {
        release_op(i);
        return;
    }
    in_msg& m          = msgs_[size_t(o.msg)];
    const fast_path& f = inner_->fast();
    for (size_t c = 0; c < chunks_.size(); ++c) {
        chunk& k = chunks_[c];
        if (k.state != ch_state::pay_rx || k.msg != o.msg || k.early >= 0) {
            continue;  // (an early read lands in its own buffer and is dropped: m.drain)
        }
        if (!k.rx_posted) {
            k.rx_into = sink_.get();  // still to post (retry): into the sink instead
            continue;
        }
        if (f.cancel(f.ctx, cookie_of(k_pay_rx, c))) {
            // The inner driver drained the payload if it was being read; otherwise the
            // payload is still to come, and a sink receive must take it (the upstream
            // rank's send waits for it). Which of the two is not known here, so the sink
            // receive is posted either way and left as an orphan: not pending, freed if
            // it ever completes.
            m.done_bytes += k.h.len;
            k.msg     = -1;
            k.orphan  = true;
            k.rx_into = sink_.get();
            --live_chunks_;
            if (!try_rx(uint32_t(c))) {
                retry_.push_back(uint32_t(c));
            }
        }
    }
    m.rop   = -1;
    m.drain = true;  // (taken already: it was matched)
    release_op(i);
    drain_parked(int(&m - msgs_.data()));
    msg_progress(int(&m - msgs_.data()));
}

}  // namespace loom::drivers::forward
