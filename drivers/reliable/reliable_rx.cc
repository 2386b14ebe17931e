// SPDX-License-Identifier: Apache-2.0
// Frames in (reliable_endpoint.hh): every frame is checked (length, magic, checksum, job key,
// ranks, incarnations) before anything of it is believed; sequenced frames then pass the
// receive window and are processed strictly in sequence order, so a peer's messages,
// rendezvous requests and data are seen in the order it sent them. Matching is the shared
// matcher's (drivers/common/matcher.hh): the mismatch decision is made from the header, before
// any byte of the payload lands. A frame that cannot be processed yet (no early buffer free)
// waits in the window and the peer's stream pauses: nothing unexpected is dropped for lack of
// space.
#include <cstring>

#include "drivers/reliable/reliable_endpoint.hh"

namespace loom::drivers::reliable {

void rel_endpoint::receive(int link) {
    common::frame_view views[32];
    // A bounded burst per link per pass, so one busy link cannot starve timers and sends.
    for (int burst = 0; burst < 8; ++burst) {
        int n = links_[size_t(link)]->recv(views, 32);
        if (n <= 0) {
            return;
        }
        for (int i = 0; i < n; ++i) {
            accept_frame(link, views[i].data, views[i].len);
        }
    }
}

void rel_endpoint::accept_frame(int link, const uint8_t* data, size_t len) {
    header h;
    switch (decode(data, len, &h)) {
        case parse_result::ok:
            break;
        case parse_result::truncated:
            ++stats_.truncated;
            return;
        case parse_result::bad_magic:
            ++stats_.bad_header;
            return;
        case parse_result::bad_checksum:
            ++stats_.bad_checksum;
            return;
    }
    if (h.key != key_) {
        ++stats_.bad_key;
        return;
    }
    if (h.dst != uint32_t(rank_) || h.src >= uint32_t(size_) || int(h.src) == rank_ ||
        peers_[h.src].link != link) {
        ++stats_.unknown_rank;
        return;
    }
    peer& p   = peers_[h.src];
    auto kind = frame_kind(h.kind);
    if (kind == frame_kind::hello || kind == frame_kind::hello_ack) {
        if (kind == frame_kind::hello_ack && h.dst_inc != inc_) {
            ++stats_.stale;  // answers an earlier endpoint of this rank
            return;
        }
        if (p.known && h.src_inc != p.inc) {
            ++stats_.stale;  // an earlier (or later) endpoint of that rank
            return;
        }
        if (!p.known) {
            p.known = true;
            p.inc   = h.src_inc;
            p.rx.start(h.seq);
        }
        p.last_heard = now_;
        ++stats_.frames_received;
        if (kind == frame_kind::hello) {
            send_hello(p, frame_kind::hello_ack);
        } else {
            p.connected = true;
        }
        return;
    }
    if (!p.known || h.src_inc != p.inc || h.dst_inc != inc_) {
        ++stats_.stale;
        return;
    }
    if (p.failed) {
        if (kind == frame_kind::goodbye && !closed_) {
            send_ack(p, flag_farewell);  // our first answer may have been lost: answer again
        }
        return;
    }
    p.last_heard = now_;
    ++stats_.frames_received;
    if ((h.flags & flag_ack) != 0) {
        on_ack(p, h);
    }
    switch (kind) {
        case frame_kind::ack:
            if ((h.flags & flag_ping) != 0) {
                p.ack_due = true;
            }
            if ((h.flags & flag_farewell) != 0) {
                p.farewell = true;
            }
            return;
        case frame_kind::goodbye:
            // Answered before the peer is failed: the closing endpoint waits for this answer
            // so that it does not take its link down (and, over memif, the rings that still
            // hold its last acks) while we have not yet read them.
            send_ack(p, flag_farewell);
            fail_peer(p, "it said goodbye (its endpoint closed)");
            return;
        default:
            accept_sequenced(p, h, data, len);
    }
}

void rel_endpoint::accept_sequenced(peer& p, const header& h, const uint8_t* data, size_t len) {
    p.ack_due = true;
    ++p.unacked_rx;
    switch (p.rx.classify(h.seq)) {
        case recv_window::verdict::next:
            if (process(p, h, data + header_bytes)) {
                p.rx.advance();
                drain(p);
            } else {
                p.rx.store(h.seq, data, len);  // its turn comes again when room frees
                ++stats_.stalls;
            }
            break;
        case recv_window::verdict::ahead:
            p.rx.store(h.seq, data, len);
            ++stats_.held_out_of_order;
            break;
        case recv_window::verdict::duplicate:
            ++stats_.duplicates;
            break;
        case recv_window::verdict::beyond:
            ++stats_.out_of_window;
            break;
    }
    if (p.unacked_rx >= opts_.ack_every) {
        send_ack(p, 0);
    }
}

void rel_endpoint::drain(peer& p) {
    const uint8_t* data = nullptr;
    size_t len          = 0;
    while (!p.failed && p.rx.peek(&data, &len)) {
        header h;
        if (decode(data, len, &h) != parse_result::ok || !process(p, h, data + header_bytes)) {
            return;
        }
        p.rx.advance();
    }
}

bool rel_endpoint::process(peer& p, const header& h, const uint8_t* body) {
    switch (frame_kind(h.kind)) {
        case frame_kind::data:
            return on_data(p, h, body);
        case frame_kind::rts:
            return on_rts(p, h);
        case frame_kind::cts:
            on_cts(p, h);
            return true;
        default:
            return true;  // unsequenced kinds never get here
    }
}

early_msg* rel_endpoint::take_early(uint64_t len) {
    early_msg* e = early_.take();
    if (e == nullptr) {
        return nullptr;
    }
    e->buf = nullptr;
    if (len > 0) {
        early_buffer* b = buffers_.take();
        if (b == nullptr) {
            early_.put(e);
            return nullptr;
        }
        e->buf = b->bytes;
    }
    return e;
}

void rel_endpoint::free_early(early_msg* e) {
    if (e->buf != nullptr) {
        // The buffer's slab entry is found from its bytes: entries and bytes share an index.
        size_t i = size_t(e->buf - buffer_bytes_.data()) / opts_.eager_limit;
        buffers_.put(&buffers_[i]);
        e->buf = nullptr;
    }
    early_.put(e);
}

bool rel_endpoint::begin_inbound(peer& p, const header& h) {
    inbound& in = p.in;
    in          = inbound{};
    in.len      = h.msg_len;
    in.imm      = h.imm;
    if ((h.flags & flag_rndv) != 0) {
        // The data of a rendezvous we answered: its receive waits under the message id.
        for (op* r = p.rndv_wait.front(); r != nullptr; r = r->next) {
            if (r->msg_id == h.msg_id) {
                p.rndv_wait.remove(r);
                r->at   = op_at::filling;
                in.recv = r;
                break;
            }
        }
    } else if (op* r = p.match.take_posted(h.tag)) {
        if (r->len != h.msg_len || r->imm != h.imm) {
            match_.complete_mismatch(r, h.imm);  // another call's message: nothing lands
        } else {
            r->at   = op_at::filling;
            in.recv = r;
        }
    } else {
        if (h.msg_len > opts_.eager_limit) {
            in.len = h.msg_len;  // a sender above our eager limit: dropped (limits differ)
        } else {
            early_msg* e = take_early(h.msg_len);
            if (e == nullptr) {
                return false;  // the stream pauses until a buffer frees
            }
            e->tag    = h.tag;
            e->imm    = h.imm;
            e->len    = h.msg_len;
            e->msg_id = h.msg_id;
            e->rts    = false;
            in.early  = e;
        }
        // A receive of the same call that expects another immediate: the ranks run other calls.
        if (op* c = p.match.take_posted_contradicting(h.tag, h.imm)) {
            match_.complete_mismatch(c, h.imm);
        }
    }
    in.active = true;
    return true;
}

bool rel_endpoint::on_data(peer& p, const header& h, const uint8_t* body) {
    if (!p.in.active) {
        if ((h.tag & control_tag_bit) != 0 && (h.flags & flag_rndv) == 0) {
            // An unsolicited notice: one completion, no payload.
            op* o = match_.take(p.rank, h.tag, h.imm, nullptr, 0, control_cookie);
            if (o == nullptr) {
                return false;
            }
            match_.complete(o, LOOM_SUCCESS, 0);
            return true;
        }
        if (!begin_inbound(p, h)) {
            return false;
        }
    }
    inbound& in = p.in;
    if (h.body > 0 && h.offset + h.body <= in.len) {
        if (in.recv != nullptr && !in.recv->cancelled) {
            std::memcpy(in.recv->buf + h.offset, body, h.body);
        } else if (in.early != nullptr) {
            std::memcpy(in.early->buf + h.offset, body, h.body);
        }
    }
    in.got += h.body;
    if (in.got >= in.len) {
        finish_inbound(p);
    }
    return true;
}

void rel_endpoint::finish_inbound(peer& p) {
    inbound& in = p.in;
    if (op* r = in.recv; r != nullptr) {
        r->at = op_at::none;
        if (r->cancelled) {
            match_.release(r);
        } else {
            r->imm = in.imm;
            match_.complete(r, LOOM_SUCCESS, in.len);
        }
    } else if (early_msg* e = in.early; e != nullptr) {
        // A receive posted while it was landing waits in the posted list.
        if (op* r = p.match.take_posted(e->tag)) {
            deliver_early(p, e, r);
        } else {
            p.match.early.push_back(e);
        }
    }
    in = inbound{};
}

void rel_endpoint::deliver_early(peer& p, early_msg* e, op* r) {
    if (e->rts) {
        answer_rts(p, r, e->msg_id, e->len, e->imm);
    } else if (r->len != e->len || r->imm != e->imm) {
        match_.complete_mismatch(r, e->imm);
    } else {
        if (e->len > 0) {
            std::memcpy(r->buf, e->buf, e->len);
        }
        r->imm = e->imm;
        match_.complete(r, LOOM_SUCCESS, e->len);
    }
    free_early(e);
}

void rel_endpoint::answer_rts(peer& p, op* r, uint32_t msg_id, uint64_t len, uint64_t imm) {
    if (r->len != len || r->imm != imm) {
        match_.complete_mismatch(r, imm);
        p.ctsq.push(cts_item{msg_id, true});  // the sender completes without sending
        return;
    }
    r->msg_id = msg_id;
    r->at     = op_at::rndv_wait;
    p.rndv_wait.push_back(r);
    p.ctsq.push(cts_item{msg_id, false});
}

bool rel_endpoint::on_rts(peer& p, const header& h) {
    if (p.ctsq.size() >= p.ctsq.capacity()) {
        return false;
    }
    if (op* r = p.match.take_posted(h.tag)) {
        answer_rts(p, r, h.msg_id, h.msg_len, h.imm);
        return true;
    }
    early_msg* e = take_early(0);
    if (e == nullptr) {
        return false;
    }
    e->tag    = h.tag;
    e->imm    = h.imm;
    e->len    = h.msg_len;
    e->msg_id = h.msg_id;
    e->rts    = true;
    if (op* c = p.match.take_posted_contradicting(h.tag, h.imm)) {
        match_.complete_mismatch(c, h.imm);
    }
    p.match.early.push_back(e);
    return true;
}

void rel_endpoint::on_cts(peer& p, const header& h) {
    for (op* o = p.wait_cts.front(); o != nullptr; o = o->next) {
        if (o->msg_id != h.msg_id) {
            continue;
        }
        p.wait_cts.remove(o);
        if ((h.flags & flag_discard) != 0) {
            o->at = op_at::inflight;  // nothing to send: done as if acknowledged
            p.inflight.push_back(o);
            finish_send(p, o);
        } else {
            o->cts_ok = true;
            o->at     = op_at::sendq;
            p.sendq.push_back(o);
        }
        return;
    }
}

}  // namespace loom::drivers::reliable
