// SPDX-License-Identifier: Apache-2.0
// The tcp driver's fast path machinery: the non-blocking send state machine (a ring of frames
// written with sendmsg from the users' buffers) and the receive state machine (headers and
// small payloads through a staging buffer, large payloads straight into their destination).
// Only non-blocking socket calls; no allocation except when the early-arrival pool grows past
// its high-water mark.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "drivers/tcp/tcp.hh"

namespace loom::drivers::tcp {
namespace {

// A payload with at least this much left is read straight into its destination; smaller
// remainders come through the staging buffer, so one recv() serves many small frames.
constexpr uint64_t direct_read_bytes = 8 * 1024;
// Frames gathered into one sendmsg(): enough to batch thousands of small messages per
// system call, well under IOV_MAX (1024).
constexpr int max_iov = 64;
// Bytes read from one peer per poll(), so a long stream does not starve the other peers.
constexpr uint64_t read_budget_bytes = uint64_t{4} << 20;

}  // namespace

// ---- transmit ----

bool tcp_endpoint::enqueue(peer& p, frame_type type, uint64_t tag, uint64_t imm, uint64_t len,
                           const void* payload, int32_t desc) {
    if (p.wire_full()) {
        return false;
    }
    frame& f = p.wire[p.wire_tail & p.wire_mask];
    encode_header(f.hdr, type, tag, imm, len);
    bool carries  = type == frame_type::eager || type == frame_type::data;
    f.payload     = static_cast<const uint8_t*>(payload);
    f.payload_len = carries ? len : 0;
    f.written     = 0;
    f.desc        = desc;
    f.type        = type;
    ++p.wire_tail;
    return true;
}

void tcp_endpoint::advance_wire(peer& p, uint64_t sent) {
    while (!p.wire_empty()) {
        frame& f      = p.wire[p.wire_head & p.wire_mask];
        uint64_t size = header_bytes + f.payload_len;
        uint64_t take = std::min(size - f.written, sent);
        f.written += take;
        sent -= take;
        if (f.written < size) {
            return;
        }
        ++p.wire_head;
        p.control_queued -= f.type == frame_type::control ? 1 : 0;
        // An RTS's descriptor completes later, from the clear-to-send (cts_table_).
        if (f.desc >= 0 && (f.type == frame_type::eager || f.type == frame_type::data)) {
            complete_send(p, uint32_t(f.desc), LOOM_SUCCESS);
        }
    }
}

void tcp_endpoint::watch_writable(peer& p) {
    // EPOLLOUT only while frames wait for socket space, so wait_fd() wakes a sleeping caller
    // for them and an idle connection never reports itself writable.
    bool want = !p.wire_empty() && !p.failed;
    if (want != p.watch_out && p.fd >= 0) {
        epoll_event ev{};
        ev.events   = EPOLLIN | (want ? uint32_t(EPOLLOUT) : 0u);
        ev.data.u32 = uint32_t(p.rank);
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, p.fd, &ev);
        p.watch_out = want;
    }
}

void tcp_endpoint::flush(peer& p) {
    while (!p.wire_empty() && !p.failed) {
        iovec iov[max_iov];
        int n          = 0;
        uint64_t total = 0;
        for (uint32_t i = p.wire_head; i != p.wire_tail && n + 2 <= max_iov; ++i) {
            const frame& f = p.wire[i & p.wire_mask];
            uint64_t w     = f.written;
            if (w < header_bytes) {
                iov[n++] = {const_cast<uint8_t*>(f.hdr + w), header_bytes - w};
                total += header_bytes - w;
                w = header_bytes;
            }
            if (w - header_bytes < f.payload_len) {
                uint64_t done = w - header_bytes;
                iov[n++]      = {const_cast<uint8_t*>(f.payload + done), f.payload_len - done};
                total += f.payload_len - done;
            }
        }
        msghdr msg{};
        msg.msg_iov    = iov;
        msg.msg_iovlen = size_t(n);
        ssize_t sent   = ::sendmsg(p.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                fail_peer(p, std::string("failed: send: ") + std::strerror(errno));
                return;
            }
            break;
        }
        advance_wire(p, uint64_t(sent));
        if (uint64_t(sent) < total) {
            break;  // the socket buffer is full; the next poll() goes on
        }
    }
    if (p.watch_out != (!p.wire_empty() && !p.failed)) {
        watch_writable(p);
    }
}

// ---- receive ----

void tcp_endpoint::stall(peer& p) {
    if (!p.stalled) {
        p.stalled = true;
        ++stalled_count_;
    }
}

bool tcp_endpoint::protocol_error(peer& p, const std::string& what) {
    fail_peer(p, "failed: protocol error: " + what);
    return false;
}

void tcp_endpoint::begin_payload(peer& p, sink kind, uint8_t* dst, uint64_t len, uint64_t tag,
                                 uint64_t imm, uint64_t cookie, rx_entry* entry) {
    p.rx = rx_state{kind, dst, dst, len, len, tag, imm, cookie, entry};
    if (len == 0) {
        finish_payload(p);
    }
}

void tcp_endpoint::consume_payload(peer& p, const uint8_t* src, uint64_t n) {
    if (p.rx.kind != sink::discard) {
        std::memcpy(p.rx.dst, src, n);
        p.rx.dst += n;
    }
    p.rx.remaining -= n;
}

void tcp_endpoint::finish_payload(peer& p) {
    rx_state rx = p.rx;
    p.rx        = rx_state{};
    if (rx.kind == sink::user) {
        complete_recv(p.rank, rx.cookie, LOOM_SUCCESS, rx.total, rx.tag, rx.imm);
    } else if (rx.kind == sink::slot) {
        rx.entry->complete = true;
        if (rx.entry->claimed) {
            deliver_early(rx.entry);
        }
    }
}

bool tcp_endpoint::handle_eager(peer& p, const header& h) {
    if (h.len > settings_.eager_limit) {
        return protocol_error(p, "eager frame of " + std::to_string(h.len) + " bytes");
    }
    if (rx_entry* r = p.match.take_posted(h.tag)) {
        bool other = h.len != r->len || h.imm != r->imm;
        if (other) {
            // Another call's message: decided from the header, the payload is dropped.
            complete_recv(p.rank, r->cookie, LOOM_ERR_MISMATCH, 0, h.tag, h.imm);
        }
        return take_payload(p, h, r, other);
    }
    uint8_t* slot = entries_.in_use() < entries_.size() ? pool_.get(h.len) : nullptr;
    if (slot == nullptr) {
        stall(p);  // resumes when a receive frees an entry or pool space
        return false;
    }
    rx_entry* e = take_early_entry(p, h, rx_kind::early_eager);
    e->slot     = slot;
    p.rpos += header_bytes;
    begin_payload(p, sink::slot, slot, h.len, h.tag, h.imm, 0, e);
    return true;
}

// `e`, a receive off every list, meets a rendezvous request of (msg_len, msg_imm).
bool tcp_endpoint::answer_rts(peer& p, rx_entry* e, uint64_t msg_len, uint64_t msg_imm) {
    uint64_t tag = e->tag;
    bool queued;
    if (msg_len != e->len || msg_imm != e->imm) {
        // The sender's buffer is released by the NACK; its send completes with success.
        complete_recv(p.rank, e->cookie, LOOM_ERR_MISMATCH, 0, tag, msg_imm);
        entries_.put(e);
        queued = enqueue(p, frame_type::nack, tag, msg_imm, 0, nullptr, -1);
    } else {
        e->kind    = rx_kind::awaiting_data;
        e->msg_len = msg_len;
        p.awaiting_data.push_back(e);
        queued = enqueue(p, frame_type::cts, tag, msg_imm, msg_len, nullptr, -1);
    }
    if (!queued) {
        return protocol_error(p, "more rendezvous requests than LOOM_TCP_SEND_QUEUE allows");
    }
    flush(p);
    return !p.failed;
}

rx_entry* tcp_endpoint::take_early_entry(peer& p, const header& h, rx_kind kind) {
    // A receive of the same call expecting another immediate: the ranks run other calls.
    if (rx_entry* r = p.match.take_posted_contradicting(h.tag, h.imm)) {
        complete_recv(p.rank, r->cookie, LOOM_ERR_MISMATCH, 0, h.tag, h.imm);
        entries_.put(r);
    }
    rx_entry* e = entries_.take();
    if (e != nullptr) {
        *e         = rx_entry{};
        e->tag     = h.tag;
        e->imm     = h.imm;
        e->peer    = p.rank;
        e->kind    = kind;
        e->msg_len = h.len;
        p.match.early.push_back(e);
    }
    return e;
}

bool tcp_endpoint::handle_rts(peer& p, const header& h) {
    rx_entry* e = p.match.take_posted(h.tag);
    p.rpos += header_bytes;
    if (e != nullptr) {
        return answer_rts(p, e, h.len, h.imm);
    }
    if (take_early_entry(p, h, rx_kind::early_rts) == nullptr) {
        p.rpos -= header_bytes;  // the header stays until an entry frees
        stall(p);
        return false;
    }
    return true;
}

bool tcp_endpoint::handle_cts(peer& p, const header& h, bool nack) {
    send_desc* s = p.awaiting_cts.find_tag(h.tag);
    if (s == nullptr) {
        return protocol_error(
            p, "clear-to-send for tag " + std::to_string(h.tag) + ", which no send waits for");
    }
    p.awaiting_cts.remove(s);
    auto d = uint32_t(s - p.descs.data());
    p.rpos += header_bytes;
    if (nack) {
        complete_send(p, d, LOOM_SUCCESS);  // as drivers/self: the receive reports the mismatch
        return true;
    }
    // Room is certain: this descriptor's RTS has left the ring, so it holds no frame now.
    enqueue(p, frame_type::data, s->tag, s->imm, s->len, s->buf, int32_t(d));
    flush(p);
    return !p.failed;
}

bool tcp_endpoint::handle_data(peer& p, const header& h) {
    rx_entry* e = p.awaiting_data.find_tag(h.tag);
    if (e == nullptr || e->msg_len != h.len) {
        return protocol_error(
            p, "data frame for tag " + std::to_string(h.tag) + " that no clear-to-send asked for");
    }
    p.awaiting_data.remove(e);
    // A receive withdrawn after its CTS: the data is read and dropped.
    return take_payload(p, h, e, e->cancelled);
}

bool tcp_endpoint::take_payload(peer& p, const header& h, rx_entry* e, bool drop) {
    p.rpos += header_bytes;
    if (drop) {
        begin_payload(p, sink::discard, nullptr, h.len, h.tag, h.imm, 0);
    } else {
        begin_payload(p, sink::user, reinterpret_cast<uint8_t*>(e->buf), h.len, h.tag, h.imm,
                      e->cookie);
    }
    entries_.put(e);
    return true;
}

bool tcp_endpoint::handle_control(peer& p, const header& h) {
    if ((h.tag & control_tag_bit) == 0 || h.len != 0) {
        return protocol_error(p, "control frame with tag " + std::to_string(h.tag));
    }
    if (controls_held_ >= control_completions_held) {
        stall(p);  // poll() hands some out first
        return false;
    }
    p.rpos += header_bytes;
    complete(completion{control_cookie, LOOM_SUCCESS, p.rank, 0, h.tag, h.imm}, cq_kind::control);
    return true;
}

bool tcp_endpoint::handle_header(peer& p, const header& h) {
    switch (h.type) {
        case frame_type::eager:
            return handle_eager(p, h);
        case frame_type::rts:
            return handle_rts(p, h);
        case frame_type::cts:
            return handle_cts(p, h, false);
        case frame_type::nack:
            return handle_cts(p, h, true);
        case frame_type::data:
            return handle_data(p, h);
        case frame_type::control:
            return handle_control(p, h);
        case frame_type::bye:
            p.rpos += header_bytes;
            fail_peer(p, "closed its endpoint", true);
            return false;
    }
    return protocol_error(p, "unknown frame type " + std::to_string(int(h.type)));
}

bool tcp_endpoint::read_some(peer& p, uint64_t* budget, bool* drained) {
    bool direct =
        (p.rx.kind == sink::user || p.rx.kind == sink::slot) && p.rx.remaining >= direct_read_bytes;
    uint8_t* dst;
    size_t room;
    if (direct) {
        dst  = p.rx.dst;
        room = p.rx.remaining;
    } else {
        if (p.rpos > 0) {  // keep a partial header at the front
            std::memmove(p.staging.data(), p.staging.data() + p.rpos, p.wpos - p.rpos);
            p.wpos -= p.rpos;
            p.rpos = 0;
        }
        dst  = p.staging.data() + p.wpos;
        room = p.staging.size() - p.wpos;
    }
    ssize_t n = ::recv(p.fd, dst, room, MSG_DONTWAIT);
    if (n > 0) {
        *budget -= std::min(*budget, uint64_t(n));
        *drained = size_t(n) < room;  // the socket had no more: skip the recv that says EAGAIN
        if (!direct) {
            p.wpos += size_t(n);
            return true;
        }
        p.rx.dst += n;
        p.rx.remaining -= uint64_t(n);
        if (p.rx.remaining == 0) {
            finish_payload(p);
        }
        return true;
    }
    if (n == 0) {
        fail_peer(p, "failed: connection closed by the peer (EOF)");
        return false;
    }
    if (errno == EINTR) {
        return true;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
        fail_peer(p, std::string("failed: recv: ") + std::strerror(errno));
    }
    return false;
}

void tcp_endpoint::read_peer(peer& p) {
    uint64_t budget = read_budget_bytes;
    bool drained    = false;  // epoll is level-triggered: what comes later wakes the next poll
    while (!p.failed && !p.stalled) {
        size_t staged = p.wpos - p.rpos;
        if (p.rx.kind != sink::none && staged > 0) {
            uint64_t n = std::min<uint64_t>(staged, p.rx.remaining);
            consume_payload(p, p.staging.data() + p.rpos, n);
            p.rpos += size_t(n);
            if (p.rx.remaining == 0) {
                finish_payload(p);
            }
            continue;
        }
        if (p.rx.kind == sink::none && staged >= header_bytes) {
            if (!handle_header(p, decode_header(p.staging.data() + p.rpos))) {
                return;
            }
            continue;
        }
        if (budget == 0 || drained || !read_some(p, &budget, &drained)) {
            return;
        }
    }
}

}  // namespace loom::drivers::tcp
