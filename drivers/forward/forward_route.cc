// SPDX-License-Identifier: Apache-2.0
// Routing and flow control of the forwarding wrapper (forward_endpoint.hh): where a chunk
// goes next and on which virtual channel, the buffer classes that keep routers free of
// deadlock, cutting a source's sends into chunks within its window, relaying a chunk at a
// router, retrying what the inner driver refused, and taking up stalled headers.
#include <algorithm>
#include <cstring>
#include <memory>

#include "drivers/forward/forward_endpoint.hh"

namespace loom::drivers::forward {

// The VC chunk `h` leaves on (routing/route_table.hh): its route entry's rule applied to
// the link it came in on (-1 at the source) and the VC it travelled there.
int forward_endpoint::out_vc_of(const header& h, int in_link) const {
    const routing::route_entry& e = table_.to(h.dst);
    int arrival_dim               = in_link >= 0 ? links_[size_t(in_link)].dim : -1;
    return routing::out_vc(e.vc, arrival_dim, (h.flags & flag_vc1) != 0 ? 1 : 0, e.dim);
}

int forward_endpoint::class_of(const header& h, int in_link) const {
    return table_.to(h.dst).port * vcs_ + out_vc_of(h, in_link);
}

int forward_endpoint::take_chunk() {
    if (free_chunks_.empty()) {
        return -1;
    }
    uint32_t c = free_chunks_.back();
    free_chunks_.pop_back();
    chunks_[c] = chunk{};
    ++live_chunks_;
    return int(c);
}

void forward_endpoint::free_chunk(uint32_t c) {
    chunk& k = chunks_[c];
    if (k.buf >= 0) {
        free_bufs_[size_t(k.buf) / per_class_].push_back(k.buf);
        k.buf = -1;
    }
    if (k.early >= 0) {
        free_early_.push_back(k.early);
        k.early = -1;
    }
    k.state = ch_state::free;
    free_chunks_.push_back(c);
    live_chunks_ -= k.orphan ? 0 : 1;
}

// Gives freed buffers to the chunks waiting for their class, takes up stalled headers, then
// cuts chunks of the pending sends while chunks, windows and the sends' half of the chunks
// allow (arrivals first: they free chunks downstream).
void forward_endpoint::pump() {
    for (size_t cls = 0; cls < waiting_.size(); ++cls) {
        while (!waiting_[cls].empty() && !free_bufs_[cls].empty()) {
            uint32_t c = waiting_[cls].front();
            waiting_[cls].pop_front();
            --waiting_chunks_;
            chunks_[c].buf = free_bufs_[cls].back();
            free_bufs_[cls].pop_back();
            start_rx(c, bufs_[size_t(chunks_[c].buf)].get());
        }
    }
    for (size_t n = stalled_.size(); n > 0 && !free_chunks_.empty(); --n) {
        uint32_t at = stalled_.front();
        stalled_.pop_front();
        on_header(int(at / cfg_.headers), at % cfg_.headers, LOOM_SUCCESS);  // or stalls again
    }
    size_t keep = 0;
    for (size_t s = 0; s < sends_.size(); ++s) {
        int i      = sends_[s];
        user_op& o = ops_[size_t(i)];
        while ((o.issued < o.len || !o.first_issued) && o.chunks_out < cfg_.window &&
               own_chunks_ < cfg_.max_ops / 2) {
            int c = take_chunk();
            if (c < 0) {
                break;
            }
            size_t n = std::min(cfg_.chunk, o.len - o.issued);
            chunk& k = chunks_[size_t(c)];
            k.h      = header{rank_, o.peer, o.tag, o.imm, o.len, o.issued, uint32_t(n), 0};
            k.sop    = i;
            k.data   = o.src + o.issued;
            o.issued += n;
            o.first_issued = true;
            ++o.chunks_out;
            ++own_chunks_;
            start_tx(uint32_t(c));
        }
        if (o.issued < o.len || !o.first_issued) {
            sends_[keep++] = i;
        }
    }
    sends_.resize(keep);
}

void forward_endpoint::start_tx(uint32_t c) {
    chunk& k     = chunks_[c];
    k.h.flags    = (k.h.flags & ~flag_vc1) | (out_vc_of(k.h, k.in_link) == 1 ? flag_vc1 : 0);
    k.state      = ch_state::tx;
    k.out_link   = link_of_[size_t(table_.to(k.h.dst).next)];
    k.out_seq    = links_[size_t(k.out_link)].tx_seq++;
    k.tx_pending = k.h.len > 0 ? 2 : 1;
    k.hdr_posted = false;
    k.pay_posted = k.h.len == 0;
    if (!try_tx(c)) {
        retry_.push_back(c);
    }
}

// Posts what is not yet posted of chunk c's header and payload; false on NO_RESOURCE.
bool forward_endpoint::try_tx(uint32_t c) {
    chunk& k           = chunks_[c];
    link_state& l      = links_[size_t(k.out_link)];
    const fast_path& f = inner_->fast();
    if (!k.hdr_posted) {
        loom_status_t st = f.post_send(f.ctx, l.peer, tag_hdr(k.out_seq), 0, &k.h, sizeof(header),
                                       cookie_of(k_tx_hdr, c));
        if (st == LOOM_ERR_NO_RESOURCE) {
            return false;
        }
        k.hdr_posted = true;
        ++l.stat.sent_msgs;
        l.stat.sent_bytes += k.h.len;
        if (k.in_link >= 0) {
            ++links_[size_t(k.in_link)].stat.forwarded;
        }
        if (st != LOOM_SUCCESS) {
            k.pay_posted = true;  // refused: the payload does not follow its header
            k.tx_pending = 1;
            tx_done(c, st);
            return true;
        }
    }
    if (!k.pay_posted) {
        loom_status_t st = f.post_send(f.ctx, l.peer, tag_hdr(k.out_seq) + 1, 0, k.data, k.h.len,
                                       cookie_of(k_tx_pay, c));
        if (st == LOOM_ERR_NO_RESOURCE) {
            return false;
        }
        k.pay_posted = true;
        if (st != LOOM_SUCCESS) {
            tx_done(c, st);
        }
    }
    return true;
}

void forward_endpoint::tx_done(uint32_t c, loom_status_t st) {
    chunk& k = chunks_[c];
    if (k.sop >= 0 && st != LOOM_SUCCESS && ops_[size_t(k.sop)].status == LOOM_SUCCESS) {
        ops_[size_t(k.sop)].status = st;
    }
    if (--k.tx_pending > 0) {
        return;
    }
    if (k.sop >= 0) {
        user_op& o = ops_[size_t(k.sop)];
        --o.chunks_out;
        --own_chunks_;
        if (o.chunks_out == 0 && o.issued == o.len && o.first_issued) {
            finish(k.sop, completion{0, o.status, o.peer, o.len, o.tag, o.imm});
        }
    }
    free_chunk(c);
}

void forward_endpoint::start_rx(uint32_t c, uint8_t* into) {
    chunk& k    = chunks_[c];
    k.state     = ch_state::pay_rx;
    k.rx_into   = into;
    k.rx_posted = false;
    if (!try_rx(c)) {
        retry_.push_back(c);
    }
}

bool forward_endpoint::try_rx(uint32_t c) {
    chunk& k           = chunks_[c];
    const fast_path& f = inner_->fast();
    loom_status_t st = f.post_recv(f.ctx, links_[size_t(k.in_link)].peer, tag_hdr(k.in_seq) + 1, 0,
                                   k.rx_into, k.h.len, cookie_of(k_pay_rx, c));
    if (st == LOOM_ERR_NO_RESOURCE) {
        return false;
    }
    k.rx_posted = true;
    if (st != LOOM_SUCCESS) {
        rx_done(c, st, false);
    }
    return true;
}

void forward_endpoint::rx_done(uint32_t c, loom_status_t st, bool withdrawn) {
    chunk& k = chunks_[c];
    if (k.h.dst != rank_) {
        // Forwarded: the payload is in buffer k.buf; send it on. A failed or revoked read
        // still goes on (the destination waits for every chunk), flagged as void: the
        // destination completes the receive with PEER_FAILURE and `withdrawn`.
        if (st != LOOM_SUCCESS || withdrawn) {
            k.h.flags |= flag_withdrawn;  // the bytes are void: say so downstream
        }
        k.data = bufs_[size_t(k.buf)].get();
        start_tx(c);
        return;
    }
    arrived(c, st, withdrawn);
}

void forward_endpoint::on_header(int link, uint32_t slot, loom_status_t st) {
    link_state& l = links_[size_t(link)];
    header h      = l.hdr[slot];
    uint32_t seq  = l.hdr_seq[slot];
    if (st != LOOM_SUCCESS) {
        return;  // the link failed: its receives are gone (no repost)
    }
    bool blocked = h.dst != rank_ && h.len > 0 && waiting_chunks_ >= cfg_.max_ops / 8 &&
                   free_bufs_[size_t(class_of(h, link))].empty();
    if (free_chunks_.empty() || blocked) {
        // No chunk entry, or a forwarded chunk whose class is busy while an eighth of the
        // entries already wait for theirs (the rest are kept for the sources and for
        // arrivals): the header waits in its slot, unposted, so that link slows down
        // (back-pressure) instead of losing it; pump() takes it up again.
        stalled_.push_back(uint32_t(link) * cfg_.headers + slot);
        return;
    }
    int c           = take_chunk();  // before the repost, which may handle other arrivals
    l.hdr_seq[slot] = l.rx_seq++;
    post_header_rx(link, slot);
    ++l.stat.recv_msgs;
    l.stat.recv_bytes += h.len;
    chunk& k  = chunks_[size_t(c)];
    k.h       = h;
    k.in_link = link;
    k.in_seq  = seq;
    if (h.dst != rank_) {
        if (h.len == 0) {
            start_tx(uint32_t(c));
            return;
        }
        k.cls = class_of(h, link);
        if (free_bufs_[size_t(k.cls)].empty()) {
            // Its channel's buffers are busy: the chunk waits (its payload with the inner
            // driver, back-pressuring the upstream send), the link's other classes go on.
            k.state = ch_state::waiting;
            waiting_[size_t(k.cls)].push_back(uint32_t(c));
            ++waiting_chunks_;
            return;
        }
        k.buf = free_bufs_[size_t(k.cls)].back();
        free_bufs_[size_t(k.cls)].pop_back();
        start_rx(uint32_t(c), bufs_[size_t(k.buf)].get());
        return;
    }
    if ((h.flags & flag_control) != 0) {
        done_.push_back(completion{control_cookie, LOOM_SUCCESS, h.src, 0, h.tag, h.imm});
        free_chunk(uint32_t(c));
        return;
    }
    deliver(uint32_t(c));
}

// Cancel of send op i: the rest goes on from a private copy, since the receiver waits for
// every chunk; chunks the inner driver holds are its to finish or revoke.
void forward_endpoint::withdraw_send(int i) {
    user_op& o  = ops_[size_t(i)];
    o.cancelled = true;
    o.copy      = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(o.len, 1));
    if (o.len > 0) {
        std::memcpy(o.copy.get(), o.src, o.len);
    }
    o.src              = o.copy.get();
    const fast_path& f = inner_->fast();
    for (size_t c = 0; c < chunks_.size() && ops_[size_t(i)].live; ++c) {
        chunk& k = chunks_[c];
        if (k.state != ch_state::tx || k.sop != i) {
            continue;
        }
        if (!k.pay_posted) {
            k.data = o.copy.get() + k.h.offset;
        } else if (k.h.len > 0 && f.cancel(f.ctx, cookie_of(k_tx_pay, c))) {
            // The inner driver finishes it from its own copy (or revokes it): done here.
            tx_done(uint32_t(c), LOOM_SUCCESS);
        }
    }
}

}  // namespace loom::drivers::forward
