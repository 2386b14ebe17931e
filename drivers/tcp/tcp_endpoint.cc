// SPDX-License-Identifier: Apache-2.0
// The tcp endpoint: open, the fast-path entry points (post send, post receive, poll),
// completions, peer failure and close.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "base/check.hh"
#include "base/log.hh"
#include "drivers/registry_internal.hh"
#include "drivers/tcp/tcp.hh"

namespace loom::drivers {
namespace tcp {
namespace {

// Events taken from epoll per poll(): a batch covers every peer of an 8-rank job at once.
constexpr int max_events = 16;

// The receive with `cookie` in `list` that is not cancelled yet, or null (cancel: a scan).
rx_entry* find_cookie(const intrusive_list<rx_entry>& list, uint64_t cookie) {
    for (rx_entry* e = list.front(); e != nullptr; e = e->next) {
        if (e->cookie == cookie && !e->cancelled) {
            return e;
        }
    }
    return nullptr;
}

}  // namespace

tcp_endpoint::tcp_endpoint(const endpoint_config& config, settings s)
    : config_(config),
      settings_(std::move(s)),
      peers_(size_t(config.size)),
      loop_(std::make_unique<common::loopback>(config.rank, common::loopback_max_ops())) {
    fast_ = fast_path_of(this);
}

tcp_endpoint::~tcp_endpoint() {
    close();
}

result<std::unique_ptr<tcp_endpoint>> tcp_endpoint::create(const endpoint_config& config) {
    if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
        return invalid_argument("tcp: rank " + std::to_string(config.rank) +
                                " is not a rank of a job of size " + std::to_string(config.size));
    }
    if (!(config.timeout_s > 0)) {
        return invalid_argument("tcp: rank " + std::to_string(config.rank) +
                                ": the connect timeout must be positive");
    }
    LOOM_ASSIGN(settings s, settings_from_params(config.rank));
    return std::unique_ptr<tcp_endpoint>(new tcp_endpoint(config, std::move(s)));
}

caps tcp_endpoint::capabilities() const {
    caps c;
    c.name               = "tcp";
    c.single_copy        = true;  // rendezvous payloads go user buffer -> socket -> user buffer
    c.eager_limit        = settings_.eager_limit;
    c.max_message        = max_frame_len;
    c.detects_peer_death = true;
    c.carrier            = medium::network;
    return c;
}

const status& tcp_endpoint::peer_status(int peer) const {
    if (peer < 0 || peer >= config_.size || !peers_[size_t(peer)].failed) {
        return ok_;
    }
    return peers_[size_t(peer)].error;
}

// ---- fast path ----

void tcp_endpoint::complete(const completion& c, cq_kind kind) {
    // Never overflows: the ring holds every send and receive that may be outstanding, plus
    // control_completions_held unsolicited ones.
    cq_.push(cq_entry{c, kind});
    if (kind == cq_kind::control) {
        ++controls_held_;
    } else {
        --active_;
    }
}

void tcp_endpoint::complete_recv(int peer, uint64_t cookie, loom_status_t st, uint64_t bytes,
                                 uint64_t tag, uint64_t imm) {
    complete(completion{cookie, st, peer, bytes, tag, imm}, cq_kind::recv);
}

void tcp_endpoint::complete_send(peer& p, uint32_t desc, loom_status_t st) {
    send_desc& s = p.descs[desc];
    if (s.withdrawn) [[unlikely]] {
        // Cancelled (its op already left active_): the copy is done with, nobody is told.
        s.withdrawn = false;
        p.copies[desc].reset();
        --p.sends_outstanding;
        p.free_descs.push_back(desc);
        return;
    }
    complete(completion{s.cookie, st, p.rank, st == LOOM_SUCCESS ? s.len : 0, s.tag, s.imm},
             cq_kind::send);
    p.free_descs.push_back(desc);  // capacity reserved at connect: no allocation
}

// `e`, claimed and off every list, has its whole payload in the slot.
void tcp_endpoint::deliver_early(rx_entry* e) {
    if (e->cancelled) {
        // The receive was cancelled while the payload came into the slot: drop it.
    } else if (e->mismatch) {
        complete_recv(e->peer, e->cookie, LOOM_ERR_MISMATCH, 0, e->tag, e->imm);
    } else {
        if (e->msg_len > 0) {
            std::memcpy(e->buf, e->slot, e->msg_len);
        }
        complete_recv(e->peer, e->cookie, LOOM_SUCCESS, e->msg_len, e->tag, e->imm);
    }
    pool_.put(e->slot, e->msg_len);
    entries_.put(e);
}

// A control notice is one header and no send descriptor: it produces no send completion
// (its cookie would read as an incoming notice), as in drivers/self.
loom_status_t tcp_endpoint::send_control(peer& p, uint64_t tag, uint64_t imm) {
    if (p.failed) {
        return LOOM_ERR_PEER_FAILURE;
    }
    if (p.control_queued >= control_frames_per_peer) {
        return LOOM_ERR_NO_RESOURCE;
    }
    bool was_empty = p.wire_empty();
    enqueue(p, frame_type::control, tag, imm, 0, nullptr, -1);
    ++p.control_queued;
    if (was_empty) {
        flush(p);
    }
    return LOOM_SUCCESS;
}

loom_status_t tcp_endpoint::post_send(int peer_rank, uint64_t tag, uint64_t imm, const void* buf,
                                      size_t len, uint64_t cookie) {
    bool control = (tag & control_tag_bit) != 0;
    if (closed_ || (buf == nullptr && len > 0 && !control) || len > max_frame_len) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (peer_rank == config_.rank) {
        return loop_->post_send(tag, imm, buf, len, cookie);
    }
    if (peer_rank < 0 || peer_rank >= config_.size || !peers_[size_t(peer_rank)].connected) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(peer_rank)];
    if (control) {
        return send_control(p, tag, imm);
    }
    if (p.sends_outstanding >= settings_.send_queue) {
        return LOOM_ERR_NO_RESOURCE;
    }
    ++p.sends_outstanding;
    ++active_;
    if (p.failed) {
        complete(completion{cookie, LOOM_ERR_PEER_FAILURE, peer_rank, 0, tag, imm}, cq_kind::send);
        return LOOM_SUCCESS;
    }
    uint32_t d = p.free_descs.back();
    p.free_descs.pop_back();
    p.descs[d]     = send_desc{tag, imm, buf, len, cookie};
    bool was_empty = p.wire_empty();
    if (len <= settings_.eager_limit) {
        enqueue(p, frame_type::eager, tag, imm, len, buf, int32_t(d));
    } else {
        p.awaiting_cts.push_back(&p.descs[d]);
        enqueue(p, frame_type::rts, tag, imm, len, nullptr, int32_t(d));
    }
    if (was_empty) {
        flush(p);  // latency: the first frame goes out now, later ones batch in poll()
    }
    return LOOM_SUCCESS;
}

loom_status_t tcp_endpoint::post_recv(int peer_rank, uint64_t tag, uint64_t imm, void* buf,
                                      size_t len, uint64_t cookie) {
    if (closed_ || (buf == nullptr && len > 0) || (tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;  // control tags are never matched
    }
    if (peer_rank == config_.rank) {
        return loop_->post_recv(tag, imm, buf, len, cookie);
    }
    if (peer_rank < 0 || peer_rank >= config_.size || !peers_[size_t(peer_rank)].connected) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (recvs_outstanding_ >= settings_.max_messages) {
        return LOOM_ERR_NO_RESOURCE;
    }
    peer& p           = peers_[size_t(peer_rank)];
    rx_entry* e       = p.match.take_early(tag);
    const auto* other = e == nullptr && !p.failed ? p.match.early_contradicting(tag, imm) : nullptr;
    if (other != nullptr) {
        // A message of this call with another immediate came first: mismatched calls.
        ++recvs_outstanding_;
        ++active_;
        complete_recv(peer_rank, cookie, LOOM_ERR_MISMATCH, 0, other->tag, other->imm);
        return LOOM_SUCCESS;
    }
    if (e == nullptr && !p.failed) {
        e = entries_.take();
        if (e == nullptr) {
            return LOOM_ERR_NO_RESOURCE;
        }
        *e        = rx_entry{};
        e->tag    = tag;
        e->imm    = imm;
        e->peer   = peer_rank;
        e->buf    = static_cast<char*>(buf);
        e->len    = len;
        e->cookie = cookie;
        p.match.posted.push_back(e);
        ++recvs_outstanding_;
        ++active_;
        return LOOM_SUCCESS;
    }
    ++recvs_outstanding_;
    ++active_;
    if (e == nullptr) {  // the peer failed and left nothing for this tag
        complete_recv(peer_rank, cookie, LOOM_ERR_PEER_FAILURE, 0, tag, imm);
        return LOOM_SUCCESS;
    }
    if (e->kind == rx_kind::early_eager) {
        // The header is in: the match is decided now, even if the payload is still coming
        // (then only rx_state::entry holds it, and finish_payload() delivers it).
        e->claimed  = true;
        e->mismatch = e->msg_len != len || e->imm != imm;
        e->buf      = static_cast<char*>(buf);
        e->len      = len;
        e->cookie   = cookie;
        if (e->complete) {
            deliver_early(e);
        }
        return LOOM_SUCCESS;
    }
    // An early rendezvous request (the peer is alive: a failure drops these).
    uint64_t msg_len = e->msg_len, msg_imm = e->imm;
    e->buf    = static_cast<char*>(buf);
    e->len    = len;
    e->imm    = imm;
    e->cookie = cookie;
    answer_rts(p, e, msg_len, msg_imm);
    return LOOM_SUCCESS;
}

int tcp_endpoint::poll(completion* out, int max) {
    if (epoll_fd_ >= 0 && cq_.size() < size_t(max)) {
        for (int r : peer_ranks_) {
            peer& p = peers_[size_t(r)];
            if (p.stalled) {  // table or pool space may have come back
                p.stalled = false;
                --stalled_count_;
                read_peer(p);
            }
            if (!p.failed && !p.wire_empty()) {
                flush(p);
            }
        }
        epoll_event ev[max_events];
        int n = ::epoll_wait(epoll_fd_, ev, max_events, 0);
        for (int i = 0; i < n; ++i) {
            peer& p = peers_[ev[i].data.u32];
            if (!p.failed && !p.stalled) {
                read_peer(p);
            }
        }
    }
    int got = 0;
    for (; got < max && !cq_.empty(); ++got, cq_.pop()) {
        const cq_entry& c = cq_.front();
        out[got]          = c.c;
        if (c.kind == cq_kind::send) {
            --peers_[size_t(c.c.peer)].sends_outstanding;
        } else if (c.kind == cq_kind::recv) {
            --recvs_outstanding_;
        } else {
            --controls_held_;
        }
    }
    if (got < max && loop_->pending()) {
        got += loop_->poll(out + got, max - got);
    }
    return got;
}

// ---- cancel (the failure path: it scans, and may allocate a copy) ----

bool tcp_endpoint::cancel(uint64_t cookie) {
    return loop_->cancel(cookie) || cancel_recv(cookie) || cancel_send(cookie);
}

bool tcp_endpoint::cancel_recv(uint64_t cookie) {
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (p.rx.kind == sink::user && p.rx.cookie == cookie) {
            // Being filled: the rest of the payload is read and dropped, which keeps the
            // stream in step; the user's buffer is never written again.
            p.rx.kind = sink::discard;
            p.rx.base = p.rx.dst = nullptr;
        } else if (rx_entry* e = p.rx.kind == sink::slot ? p.rx.entry : nullptr;
                   e != nullptr && e->claimed && !e->cancelled && e->cookie == cookie) {
            e->cancelled = true;  // its payload is still coming: dropped when complete
            e->buf       = nullptr;
        } else if (rx_entry* e = find_cookie(p.match.posted, cookie)) {
            p.match.posted.remove(e);  // nothing arrived for it: forget it
            entries_.put(e);
        } else if (rx_entry* e = find_cookie(p.awaiting_data, cookie)) {
            e->cancelled = true;  // the CTS is out: the data frame goes to a sink
            e->buf       = nullptr;
        } else {
            continue;
        }
        --recvs_outstanding_;
        --active_;
        return true;
    }
    return false;
}

void tcp_endpoint::remove_frame(peer& p, uint32_t pos) {
    for (uint32_t i = pos; i + 1 != p.wire_tail; ++i) {
        p.wire[i & p.wire_mask] = p.wire[(i + 1) & p.wire_mask];
    }
    --p.wire_tail;
    watch_writable(p);  // the ring may be empty now
}

void tcp_endpoint::withdraw_send(peer& p, uint32_t d, frame* f) {
    send_desc& s = p.descs[d];
    if (p.copies.empty()) {
        p.copies.resize(p.descs.size());
    }
    std::unique_ptr<uint8_t[]> copy;
    if (f == nullptr || f->type == frame_type::rts) {
        // The receiver may answer CTS any time: the data frame goes from a copy of it all.
        copy = std::make_unique_for_overwrite<uint8_t[]>(s.len);
        if (s.len > 0) {
            std::memcpy(copy.get(), s.buf, s.len);
        }
        s.buf = copy.get();
    } else {
        // On the wire: copy what the kernel has not taken, and rebase the frame onto it (a
        // header already out stays out; the payload restarts at the copy's first byte).
        uint64_t done = f->written > header_bytes ? f->written - header_bytes : 0;
        uint64_t rest = f->payload_len - done;
        copy          = std::make_unique_for_overwrite<uint8_t[]>(rest);
        if (rest > 0) {
            std::memcpy(copy.get(), f->payload + done, rest);
        }
        f->payload = copy.get();
        if (done > 0) {
            f->payload_len = rest;
            f->written     = header_bytes;
        }
        s.buf = nullptr;
    }
    p.copies[d] = std::move(copy);
    s.withdrawn = true;
    --active_;
}

bool tcp_endpoint::cancel_send(uint64_t cookie) {
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (p.failed) {
            continue;  // every send toward it completed already
        }
        // Frames of sends: eager, RTS and data (only the head frame can be partly written).
        for (uint32_t i = p.wire_head; i != p.wire_tail; ++i) {
            frame& f = p.wire[i & p.wire_mask];
            if (f.desc < 0) {
                continue;
            }
            auto d = uint32_t(f.desc);
            if (p.descs[d].withdrawn || p.descs[d].cookie != cookie) {
                continue;
            }
            if (f.written > 0 || f.type == frame_type::data) {
                // The receiver is reading it (or, for data, waits for it after its CTS).
                withdraw_send(p, d, &f);
                return true;
            }
            // Not started: the peer never hears of it.
            if (f.type == frame_type::rts) {
                p.awaiting_cts.remove(&p.descs[d]);
            }
            remove_frame(p, i);
            --p.sends_outstanding;
            --active_;
            p.free_descs.push_back(d);
            return true;
        }
    }
    // Rendezvous sends whose RTS is out, waiting for the CTS.
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        for (send_desc* s = p.awaiting_cts.front(); s != nullptr; s = s->next) {
            if (!s->withdrawn && s->cookie == cookie) {
                withdraw_send(p, uint32_t(s - p.descs.data()), nullptr);
                return true;
            }
        }
    }
    return false;
}

// ---- failure and close ----

int tcp_endpoint::fail_peer_entries(peer& p) {
    int failed     = 0;
    auto fail_recv = [&](uint64_t cookie, uint64_t tag, uint64_t imm) {
        complete_recv(p.rank, cookie, LOOM_ERR_PEER_FAILURE, 0, tag, imm);
        ++failed;
    };
    for (uint32_t i = p.wire_head; i != p.wire_tail; ++i) {
        const frame& f = p.wire[i & p.wire_mask];
        if (f.desc >= 0 && (f.type == frame_type::eager || f.type == frame_type::data)) {
            complete_send(p, uint32_t(f.desc), LOOM_ERR_PEER_FAILURE);
            ++failed;
        }
    }
    p.wire_head = p.wire_tail = 0;
    p.control_queued          = 0;
    while (send_desc* s = p.awaiting_cts.pop_front()) {
        complete_send(p, uint32_t(s - p.descs.data()), LOOM_ERR_PEER_FAILURE);
        ++failed;
    }
    for (intrusive_list<rx_entry>* list : {&p.match.posted, &p.awaiting_data}) {
        while (rx_entry* e = list->pop_front()) {
            if (!e->cancelled) {
                fail_recv(e->cookie, e->tag, e->imm);
            }
            entries_.put(e);
        }
    }
    // A complete early arrival still belongs to its receive: it stays deliverable.
    for (rx_entry* e = p.match.early.front(); e != nullptr;) {
        rx_entry* next = e->next;
        if (e->kind == rx_kind::early_rts || !e->complete) {
            p.match.early.remove(e);
            if (e->kind == rx_kind::early_eager) {
                pool_.put(e->slot, e->msg_len);
            }
            entries_.put(e);
        }
        e = next;
    }
    if (p.rx.kind == sink::slot && p.rx.entry->claimed) {  // off every list, still filling
        rx_entry* e = p.rx.entry;
        if (!e->cancelled) {
            fail_recv(e->cookie, e->tag, e->imm);
        }
        pool_.put(e->slot, e->msg_len);
        entries_.put(e);
    }
    if (p.rx.kind == sink::user) {
        fail_recv(p.rx.cookie, p.rx.tag, p.rx.imm);
    }
    p.rx   = rx_state{};
    p.rpos = p.wpos = 0;
    if (p.stalled) {
        p.stalled = false;
        --stalled_count_;
    }
    return failed;
}

void tcp_endpoint::fail_peer(peer& p, const std::string& why, bool graceful) {
    if (p.failed) {
        return;
    }
    p.failed = true;
    p.error  = status(LOOM_ERR_PEER_FAILURE, "tcp: rank " + std::to_string(config_.rank) +
                                                 ": peer " + std::to_string(p.rank) + " " + why);
    if (p.fd >= 0) {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p.fd, nullptr);
        ::close(p.fd);
        p.fd = -1;
    }
    int failed = fail_peer_entries(p);
    if (closed_) {
        return;  // a goodbye that found the peer gone: we are leaving anyway
    }
    if (!graceful) {
        LOOM_LOG_ERROR(log::subsystem::net, "%s", p.error.message().c_str());
    } else if (failed > 0) {
        LOOM_LOG_WARN(log::subsystem::net, "%s with %d operations toward it pending",
                      p.error.message().c_str(), failed);
    } else {
        LOOM_LOG_DEBUG(log::subsystem::net, "%s", p.error.message().c_str());
    }
}

void tcp_endpoint::say_goodbye(peer& p) {
    // Best effort, never blocking: a goodbye lets the peer tell a clean close from a crash.
    flush(p);
    if (!p.failed && enqueue(p, frame_type::bye, 0, 0, 0, nullptr, -1)) {
        flush(p);
    }
    if (p.failed) {
        return;
    }
    ::shutdown(p.fd, SHUT_WR);
    // Drain what already arrived: closing a socket with unread data sends a reset, which
    // could destroy data the peer has not read yet.
    uint8_t sink_buf[4096];
    while (::recv(p.fd, sink_buf, sizeof sink_buf, MSG_DONTWAIT) > 0) {
    }
}

void tcp_endpoint::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (!p.failed && p.fd >= 0) {
            say_goodbye(p);
        }
        // Pending operations complete with PEER_FAILURE (driver.hh); quietly: we are closing.
        p.failed = true;
        p.error  = status(LOOM_ERR_PEER_FAILURE,
                          "tcp: rank " + std::to_string(config_.rank) + ": endpoint closed");
        if (p.fd >= 0) {
            ::close(p.fd);
            p.fd = -1;
        }
        fail_peer_entries(p);
    }
    loop_->fail_all(LOOM_ERR_PEER_FAILURE);
    if (epoll_fd_ >= 0) {
        ::close(epoll_fd_);
        epoll_fd_ = -1;
    }
}

}  // namespace tcp

result<std::unique_ptr<endpoint>> open_tcp(const endpoint_config& config) {
    LOOM_ASSIGN(auto ep, tcp::tcp_endpoint::create(config));
    return std::unique_ptr<endpoint>(std::move(ep));
}

}  // namespace loom::drivers
