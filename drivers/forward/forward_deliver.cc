// SPDX-License-Identifier: Apache-2.0
// Delivery at the destination of the forwarding wrapper (forward_endpoint.hh): incoming
// messages matched to posted receives by (source, tag), whichever came first; the
// mismatch rule of driver.hh decided from a message's first header; payloads that arrive
// before their receive read into early buffers; what a mismatch or a cancel leaves drained.
#include <algorithm>
#include <cstring>

#include "drivers/forward/forward_endpoint.hh"

namespace loom::drivers::forward {

void forward_endpoint::unlist_recv(int i) {
    user_op& o = ops_[size_t(i)];
    if (o.listed) {
        sources_[size_t(o.peer)].match.posted.remove(&o);
        o.listed = false;
    }
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

// The message a chunk of (src, tag) belongs to: the oldest in progress. Receives take the
// oldest waiting message first, so a taken one is older than any still waiting.
in_msg* forward_endpoint::find_msg(int src, uint64_t tag) {
    source_lists& from = sources_[size_t(src)];
    in_msg* m          = from.taken.find_tag(tag);
    return m != nullptr ? m : from.match.early.find_tag(tag);
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
    source_lists& from            = sources_[size_t(m.src)];
    (m.taken ? from.taken : from.match.early).remove(&m);
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

// Receive r meets message m (both off their lists): matched, or a mismatch (receive
// completes, message drains).
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
    m.taken = true;
    sources_[size_t(m.src)].taken.push_back(&m);
    drain_parked(mi);
    msg_progress(mi);
}

void forward_endpoint::deliver(uint32_t c) {
    chunk& k   = chunks_[c];
    in_msg* in = find_msg(k.h.src, k.h.tag);
    if (in == nullptr) {
        if (free_msgs_.empty()) {
            // Cannot happen: messages are bounded by chunks, which are bounded likewise.
            free_chunk(c);
            return;
        }
        int mi = free_msgs_.back();
        free_msgs_.pop_back();
        in_msg& m = msgs_[size_t(mi)];
        m         = in_msg{
                    .live = true, .src = k.h.src, .tag = k.h.tag, .imm = k.h.imm, .total = k.h.total};
        k.msg = mi;
        park(mi, c);
        k.state            = ch_state::parked;
        source_lists& from = sources_[size_t(m.src)];
        if (user_op* r = from.match.take_posted(m.tag)) {
            r->listed = false;
            match(mi, index_of(r));
            return;
        }
        // The first receive of the same call with another immediate, in posting order.
        if (user_op* r = from.match.take_posted_contradicting(m.tag, m.imm)) {
            r->listed = false;
            finish(index_of(r),
                   completion{0, LOOM_ERR_MISMATCH, m.src, size_t(m.total), m.tag, m.imm});
        }
        from.match.early.push_back(&m);
        read_early(mi);
        return;
    }
    in_msg& m = *in;
    int mi    = index_of(in);
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
    user_op& o         = ops_[size_t(i)];
    source_lists& from = sources_[size_t(o.peer)];
    if (in_msg* m = from.match.take_early(o.tag)) {
        match(index_of(m), i);
        return;
    }
    if (const in_msg* x = from.match.early_contradicting(o.tag, o.imm)) {
        finish(i, completion{0, LOOM_ERR_MISMATCH, o.peer, size_t(x->total), x->tag, x->imm});
        return;
    }
    o.listed = true;
    from.match.posted.push_back(&o);
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
