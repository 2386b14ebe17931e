// SPDX-License-Identifier: Apache-2.0
// Frames out (reliable_endpoint.hh): segmentation of queued sends to the link's MTU,
// rendezvous requests and answers, acknowledgements (piggybacked on every sequenced frame,
// alone at the end of a pass that received data), retransmission on the timer wheel and on
// SACK holes. A frame takes a window slot only once the link accepted it, so a full link
// leaves the send where it was, to go on the next pass.
#include <algorithm>
#include <cstring>

#include "drivers/reliable/reliable_endpoint.hh"

namespace loom::drivers::reliable {

// The retransmission timeout doubles per retry, up to 64 times the peer's.
static double backoff(double rto_s, uint8_t tries) {
    return rto_s * double(uint64_t{1} << std::min<uint8_t>(tries, 6));
}

// The shortest probe timeout's half: below, a probe would race the peer's own ack.
constexpr double probe_floor_s = 250e-6;

// A round-trip sample updates the peer's smoothed estimate and its timeout.
static void sample_rtt(peer& p, double r, double min_rto) {
    if (p.srtt == 0) {
        p.srtt   = r;
        p.rttvar = r / 2;
    } else {
        p.rttvar = 0.75 * p.rttvar + 0.25 * (p.srtt > r ? p.srtt - r : r - p.srtt);
        p.srtt   = 0.875 * p.srtt + 0.125 * r;
    }
    p.rto = std::min(std::max(min_rto, p.srtt + 4 * p.rttvar), 1.0);
}

bool rel_endpoint::emit(peer& p, header& h, const uint8_t* body, op* owner) {
    if (p.tx.full()) {
        return false;
    }
    h.src               = uint32_t(rank_);
    h.dst               = uint32_t(p.rank);
    h.key               = key_;
    h.src_inc           = inc_;
    h.dst_inc           = p.inc;
    h.seq               = p.tx.next();
    const uint8_t* held = nullptr;
    size_t held_len     = 0;
    h.flags |= flag_ack | (p.rx.peek(&held, &held_len) ? flag_stalled : 0);
    h.ack  = p.rx.expected();
    h.sack = p.rx.sack();
    uint8_t head[header_bytes];
    encode(h, head);
    uint32_t body_crc = crc32c(0, body, h.body);
    seal(head, body_crc);
    if (!links_[size_t(p.link)]->send(head, header_bytes, body, h.body)) {
        ++stats_.link_full;
        return false;
    }
    if (p.tx.empty()) {
        p.last_progress = now_;  // the clock starts with the first frame in flight
    }
    tx_slot* s = p.tx.push();
    std::memcpy(s->head, head, header_bytes);
    s->peer     = p.rank;
    s->owner    = owner;
    s->offset   = h.offset;
    s->blen     = h.body;
    s->body_crc = body_crc;
    s->sent_at  = now_;
    wheel_.arm(s, now_ + p.rto);
    p.ack_due    = false;
    p.unacked_rx = 0;
    ++stats_.frames_sent;
    return true;
}

void rel_endpoint::pump(peer& p) {
    if (p.failed || !p.known) {
        return;
    }
    // Answers first: a receive waits on each.
    while (!p.ctsq.empty()) {
        header h;
        h.kind   = uint8_t(frame_kind::cts);
        h.msg_id = p.ctsq.front().msg_id;
        h.flags  = p.ctsq.front().discard ? flag_discard : 0;
        if (!emit(p, h, nullptr, nullptr)) {
            return;
        }
        p.ctsq.pop();
    }
    while (op* o = p.sendq.front()) {
        if (o->rndv && !o->cts_ok) {
            header h;
            h.kind    = uint8_t(frame_kind::rts);
            h.msg_id  = o->msg_id;
            h.tag     = o->tag;
            h.imm     = o->imm;
            h.msg_len = o->len;
            if (!emit(p, h, nullptr, nullptr)) {
                return;
            }
            p.sendq.remove(o);
            o->at = op_at::wait_cts;
            p.wait_cts.push_back(o);
            continue;
        }
        // One message's data frames go out back to back: the receiver keeps one message
        // per peer being reassembled.
        do {
            size_t n = std::min(payload_, o->len - o->sent);
            header h;
            h.kind    = uint8_t(frame_kind::data);
            h.flags   = o->rndv ? flag_rndv : 0;
            h.body    = uint16_t(n);
            h.msg_id  = o->msg_id;
            h.tag     = o->tag;
            h.imm     = o->imm;
            h.msg_len = o->len;
            h.offset  = o->sent;
            if (!emit(p, h, reinterpret_cast<const uint8_t*>(o->buf) + o->sent, o)) {
                return;
            }
            o->sent += n;
            ++o->unacked;
            ++stats_.data_frames_sent;
        } while (o->sent < o->len);
        p.sendq.remove(o);
        o->at = op_at::inflight;
        p.inflight.push_back(o);
    }
    arm_probe(p);
}

// Tail-loss probe: when nothing more is queued, the newest frame in flight is resent after
// about two round trips instead of a whole timeout. A lost last frame (or a lost one-frame
// message) has no later frame whose SACK would reveal it; the probe's ack does.
void rel_endpoint::arm_probe(peer& p) {
    if (p.tx.empty() || p.srtt <= 0) {
        return;
    }
    tx_slot* last = p.tx.at(p.tx.next() - 1);
    if (last == nullptr || last->probe || last->tries > 0 || last->sacked) {
        return;
    }
    double pto = std::max(2 * p.srtt, 2 * probe_floor_s);
    if (pto < p.rto) {
        last->probe = true;
        wheel_.arm(last, std::max(last->sent_at + pto, now_));
    }
}

void rel_endpoint::retransmit(tx_slot* s, bool fast) {
    peer& p = peers_[size_t(s->peer)];
    if (!s->used || p.failed) {
        return;
    }
    encode_ack(s->head, p.rx.expected(), p.rx.sack());
    seal(s->head, s->body_crc);
    const uint8_t* body = nullptr;
    if (s->owner != nullptr) {
        body = reinterpret_cast<const uint8_t*>(static_cast<op*>(s->owner)->buf) + s->offset;
    }
    if (!links_[size_t(p.link)]->send(s->head, header_bytes, body, s->blen)) {
        ++stats_.link_full;
        wheel_.arm(s, now_);  // the next tick
        return;
    }
    ++(fast                        ? stats_.fast_retransmits
       : s->probe && s->tries == 0 ? stats_.probes
                                   : stats_.retransmits);
    ++stats_.frames_sent;
    if (!fast) {
        ++s->tries;
        s->fast_done = false;
    }
    wheel_.arm(s, now_ + backoff(p.rto, s->tries));
    p.ack_due    = false;
    p.unacked_rx = 0;
}

void rel_endpoint::on_ack(peer& p, const header& h) {
    double sample = -1;
    uint32_t base = p.tx.base();
    bool ok       = p.tx.apply_ack(
              h.ack, h.sack,
              [&](tx_slot* s) {
            wheel_.disarm(s);
            if (s->tries == 0 && !s->fast_done) {
                sample = now_ - s->sent_at;  // Karn: never from a frame sent twice
            }
            if (auto* o = static_cast<op*>(s->owner); o != nullptr) {
                if (--o->unacked == 0 && o->at == op_at::inflight) {
                    finish_send(p, o);
                }
            }
        },
              [&](tx_slot* s) { retransmit(s, /*fast=*/true); });
    if (!ok) {
        ++stats_.stale;  // acknowledges frames never sent
        return;
    }
    if (p.tx.base() != base || (h.flags & flag_stalled) != 0) {
        p.last_progress = now_;
    }
    if (sample >= 0) {
        sample_rtt(p, sample, opts_.rto_s);
    }
}

void rel_endpoint::fill_unreliable(peer& p, header& h, frame_kind kind) {
    h.kind    = uint8_t(kind);
    h.src     = uint32_t(rank_);
    h.dst     = uint32_t(p.rank);
    h.key     = key_;
    h.src_inc = inc_;
    h.dst_inc = p.known ? p.inc : 0;
    if (p.known) {
        h.flags |= flag_ack;
        h.ack  = p.rx.expected();
        h.sack = p.rx.sack();
    }
}

static void send_unreliable(common::frame_link& link, const header& h, reliable_stats& stats) {
    uint8_t head[header_bytes];
    encode(h, head);
    seal(head, 0);
    if (link.send(head, header_bytes, nullptr, 0)) {
        ++stats.frames_sent;
    } else {
        ++stats.link_full;
    }
}

void rel_endpoint::send_ack(peer& p, uint8_t flags) {
    if (!p.known || p.failed) {
        return;
    }
    header h;
    const uint8_t* held = nullptr;
    size_t held_len     = 0;
    h.flags             = flags | (p.rx.peek(&held, &held_len) ? flag_stalled : 0);
    fill_unreliable(p, h, frame_kind::ack);
    send_unreliable(*links_[size_t(p.link)], h, stats_);
    ++stats_.acks_sent;
    p.ack_due    = false;
    p.unacked_rx = 0;
}

void rel_endpoint::send_hello(peer& p, frame_kind kind) {
    header h;
    fill_unreliable(p, h, kind);
    h.seq = p.first_seq;
    send_unreliable(*links_[size_t(p.link)], h, stats_);
}

void rel_endpoint::send_goodbye(peer& p) {
    if (!p.known || p.failed) {
        return;
    }
    header h;
    fill_unreliable(p, h, frame_kind::goodbye);
    send_unreliable(*links_[size_t(p.link)], h, stats_);
}

}  // namespace loom::drivers::reliable
