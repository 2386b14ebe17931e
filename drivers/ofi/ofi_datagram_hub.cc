// SPDX-License-Identifier: Apache-2.0
// The hub of ofi's datagram endpoint (ofi_datagram.hh): posted receives, the send slots,
// completions read and frames sorted to their peers, hellos answered.
#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/byte_order.hh"
#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "base/secret.hh"
#include "drivers/ofi/ofi_datagram.hh"
#include "drivers/ofi/ofi_params.hh"

namespace loom::drivers::ofi::dgram {
namespace {

constexpr int completions_per_read = 16;
constexpr int reads_per_progress   = 4;

void put_header(uint8_t* out, kind k, uint32_t peer) {
    out[0] = wire_magic;
    out[1] = wire_version;
    out[2] = uint8_t(k);
    out[3] = 0;
    be::put32(out + 4, peer);
}

/// The reliable-message provider for `wanted`: itself where offered, else the first utility
/// layered over it ("udp" -> "udp;ofi_rxd": udp's datagrams stop at 1472 bytes).
std::string reliable_name(const std::string& wanted, const std::vector<std::string>& offered) {
    if (wanted.empty() || std::find(offered.begin(), offered.end(), wanted) != offered.end()) {
        return wanted;
    }
    for (const auto& name : offered) {
        if (name.starts_with(wanted + ";")) {
            return name;
        }
    }
    return wanted;  // not offered: opening it names those that are
}

}  // namespace

hub::hub(std::unique_ptr<fabric> f, bool listening)
    : fabric_(std::move(f)),
      provider_(fabric_->provider()),
      listening_(listening),
      queue_cap_(listening ? receive_count / 2 : receive_count),
      buffers_(new buffer[receive_count + send_slots]),
      wait_fd_(fabric_->wakes_reliably() ? fabric_->wait_fd() : -1),
      max_sleep_ns_(fabric_->info()->domain_attr->data_progress == FI_PROGRESS_MANUAL ? 1'000'000
                                                                                      : INT64_MAX),
      idle_timeout_s_(params::datagram_idle_timeout.get()) {
    // Providers report a peer's end only on a send to it (the keep-alives make one), and
    // only after their own retries (seconds: tcp;ofi_rxm reconnects, udp;ofi_rxd
    // retransmits): silence decides first where the idle timeout is shorter.
    silent_after_s_ = idle_timeout_s_ > 0 ? idle_timeout_s_ : HUGE_VAL;
    keep_alive_s_   = idle_timeout_s_ > 0 ? idle_timeout_s_ / 4 : 1.0;
}

hub::~hub() {
    // The endpoint goes before the registration it may still use.
    fabric_.reset();
    if (mr_ != nullptr) {
        fi_close(&mr_->fid);
    }
}

result<std::shared_ptr<hub>> hub::open(std::string_view provider, bool listening) {
    std::string wanted = provider.empty() ? requested_provider() : std::string(provider);
    fabric_request request{.ep_type  = FI_EP_DGRAM,
                           .caps     = FI_MSG,
                           .cq_size  = 2 * (receive_count + send_slots),
                           .av_size  = 64,
                           .rank     = -1,
                           .what     = "ofi datagram",
                           .provider = wanted};
    // A named provider's own datagrams where they carry a whole frame; else reliable
    // messages, of the best provider where none is named.
    std::unique_ptr<fabric> f;
    if (!wanted.empty()) {
        auto dgram = fabric::open(request);
        if (dgram && (*dgram)->info()->ep_attr->max_msg_size >= max_message) {
            f = std::move(*dgram);
        }
    }
    if (!f) {
        request.ep_type  = FI_EP_RDM;
        request.provider = reliable_name(wanted, available_providers(request));
        LOOM_ASSIGN(f, fabric::open(request));
    }
    std::shared_ptr<hub> h(new hub(std::move(f), listening));
    LOOM_CHECK(h->setup());
    return h;
}

status hub::setup() {
    uint32_t total = receive_count + send_slots;
    if (fabric_->needs_local_mr()) {
        int rc = fi_mr_reg(fabric_->domain(), buffers_.get(), total * sizeof(buffer),
                           FI_SEND | FI_RECV, 0, 0, 0, &mr_, nullptr);
        if (rc == 0 && fabric_->mr_endpoint()) {
            rc = fi_mr_bind(mr_, &fabric_->ep()->fid, 0);
            rc = rc == 0 ? fi_mr_enable(mr_) : rc;
        }
        if (rc != 0) {
            return system_error("ofi datagram: " + provider() +
                                ": registering the datagram buffers: " + error_text(rc));
        }
        desc_ = fi_mr_desc(mr_);
    }
    if (!from_hex(fabric_->address(), &raw_) || raw_.size() > max_address) {
        return internal_error("ofi datagram: " + provider() + ": an address of " +
                              std::to_string(fabric_->address().size() / 2) + " bytes");
    }
    address_ = "ofi:" + provider() + "/" + fabric_->address();
    for (uint32_t i = 0; i < total; ++i) {
        buffers_[i].index   = i;
        buffers_[i].is_send = i >= receive_count;
    }
    free_sends_.reserve(send_slots);
    unposted_.reserve(receive_count);
    for (uint32_t i = receive_count + send_slots; i > receive_count; --i) {
        free_sends_.push_back(i - 1);
    }
    for (uint32_t i = 0; i < receive_count; ++i) {
        post_receive(i);
    }
    return status::ok();
}

void hub::post_receive(uint32_t index) {
    buffer& b  = buffers_[index];
    ssize_t rc = fi_recv(fabric_->ep(), b.bytes, max_message, desc_, FI_ADDR_UNSPEC, &b.context);
    if (rc != 0) {
        unposted_.push_back(index);  // the provider's queue is full: the next progress retries
    }
}

void hub::repost() {
    size_t still = 0;
    for (uint32_t index : unposted_) {
        buffer& b = buffers_[index];
        if (fi_recv(fabric_->ep(), b.bytes, max_message, desc_, FI_ADDR_UNSPEC, &b.context) != 0) {
            unposted_[still++] = index;
        }
    }
    unposted_.resize(still);
}

result<uint32_t> hub::add_listener_peer(const std::string& raw) {
    peer_state p;
    p.raw = raw;
    if (int rc = fi_av_insert(fabric_->av(), raw.data(), 1, &p.fi, 0, nullptr); rc != 1) {
        return invalid_argument("ofi datagram: " + provider() + ": the address " +
                                to_hex({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}) +
                                " is not one of its addresses" +
                                (rc < 0 ? ": " + error_text(rc) : std::string()));
    }
    p.last_heard_s = p.last_sent_s = now_s();
    peers_.push_back(std::move(p));
    return uint32_t(peers_.size() - 1);
}

void hub::send_hello(uint32_t peer) {
    (void)post_send(peer, kind::hello, reinterpret_cast<const uint8_t*>(raw_.data()), raw_.size());
}

bool hub::post_send(uint32_t peer, kind k, const uint8_t* payload, size_t len) {
    peer_state& p = peers_[peer];
    // A listener's peer gets a quarter of the slots: sends a dead peer never completes
    // (udp;ofi_rxd retransmits them) starve nobody else.
    uint32_t share = listening_ ? send_slots / 4 : send_slots;
    if (free_sends_.empty() || p.in_flight >= share) {
        progress();  // completions may have freed a slot
        if (free_sends_.empty() || p.in_flight >= share) {
            return false;
        }
    }
    // Taken off the free list before anything can progress the hub (which frees and takes
    // slots itself).
    uint32_t slot = free_sends_.back();
    free_sends_.pop_back();
    buffer& b = buffers_[slot];
    // The listener's peers are numbered from 1 by their index; the connecting side uses the
    // number its welcome gave it.
    put_header(b.bytes, k, listening_ ? peer + 1 : p.number);
    if (len > 0) {  // a control frame has no payload (and may pass no pointer)
        std::memcpy(b.bytes + header_bytes, payload, len);
    }
    b.peer     = peer;
    ssize_t rc = fi_send(fabric_->ep(), b.bytes, header_bytes + len, desc_, p.fi, &b.context);
    if (rc == -FI_EAGAIN) {
        progress();
        rc = fi_send(fabric_->ep(), b.bytes, header_bytes + len, desc_, p.fi, &b.context);
    }
    if (rc != 0) {
        free_sends_.push_back(slot);
        return false;
    }
    ++p.in_flight;
    p.last_sent_s = now_s();
    return true;
}

void hub::send(uint32_t peer, kind k, const uint8_t* payload, size_t len) {
    peer_state& p = peers_[peer];
    if (len > datagram_max_frame || !alive(peer) || !post_send(peer, k, payload, len)) {
        ++p.stats.send_dropped;
        return;
    }
    ++p.stats.sent;
    p.stats.bytes_sent += len;
}

void hub::progress() {
    if (!unposted_.empty()) {
        repost();
    }
    // A bounded number per call: a peer whose reader keeps up never finds more queued than
    // this, whoever else polls the hub.
    fi_cq_tagged_entry done[completions_per_read];
    for (int round = 0; round < reads_per_progress; ++round) {
        ssize_t n = fi_cq_read(fabric_->cq(), done, completions_per_read);
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            if (fi_cq_readerr(fabric_->cq(), &err, 0) != 1 || err.op_context == nullptr) {
                return;
            }
            buffer& b = *static_cast<buffer*>(err.op_context);
            if (b.is_send) {
                on_send_failed(b);
            } else {
                ++strangers_;  // a message too large for a buffer (truncated), or worse
                post_receive(b.index);
            }
            continue;
        }
        if (n <= 0) {
            return;
        }
        for (ssize_t i = 0; i < n; ++i) {
            buffer& b = *static_cast<buffer*>(done[i].op_context);
            if (b.is_send) {
                free_sends_.push_back(b.index);
                --peers_[b.peer].in_flight;
            } else {
                on_received(b, done[i].len);
            }
        }
        if (n < completions_per_read) {
            return;
        }
    }
}

void hub::on_send_failed(buffer& b) {
    free_sends_.push_back(b.index);
    peer_state& p = peers_[b.peer];
    --p.in_flight;
    if (fabric_->info()->ep_attr->type == FI_EP_DGRAM) {
        // A datagram the provider could not send (its socket full, say) is lost, no more.
        if (kind(b.bytes[2]) == kind::data) {
            --p.stats.sent;
            ++p.stats.send_dropped;
        }
        return;
    }
    // A reliable provider gave up on the peer (its process went, its connection was
    // refused). A connecting side's hello may fail so while the listener is not up yet: the
    // connect resends it.
    if (p.number != 0 || listening_) {
        p.gone = true;
        LOOM_LOG_DEBUG(log::subsystem::net, "ofi datagram: a send from %s failed",
                       address_.c_str());
    }
}

void hub::on_received(buffer& b, size_t len) {
    const uint8_t* m = b.bytes;
    if (len < header_bytes || m[0] != wire_magic || m[1] != wire_version) {
        ++strangers_;
        post_receive(b.index);
        return;
    }
    auto k          = kind(m[2]);
    uint32_t number = be::get32(m + 4);
    if (k == kind::hello) {
        if (listening_ && accepting_) {
            on_hello(m + header_bytes, len - header_bytes);
        } else {
            ++strangers_;
        }
        post_receive(b.index);
        return;
    }
    // The peer this frame belongs to: the listener's are numbered from 1; the connecting
    // side has one peer, whose frames carry the number it was given.
    uint32_t peer = UINT32_MAX;
    if (listening_) {
        if (number >= 1 && number <= peers_.size()) {
            peer = number - 1;
        }
    } else if (!peers_.empty()) {
        // A welcome carries the address it answers: another endpoint's is not this one's.
        if (k == kind::welcome && peers_[0].number == 0 && number != 0 &&
            std::string_view(reinterpret_cast<const char*>(m + header_bytes), len - header_bytes) ==
                raw_) {
            peers_[0].number = number;
        }
        if (number != 0 && number == peers_[0].number) {
            peer = 0;
        }
    }
    if (peer == UINT32_MAX || peers_[peer].closed) {
        ++strangers_;
        post_receive(b.index);
        return;
    }
    peer_state& p  = peers_[peer];
    p.last_heard_s = now_s();
    if (k == kind::goodbye) {
        p.gone = true;
    }
    if (k != kind::data) {
        if (k != kind::welcome && k != kind::keepalive && k != kind::goodbye) {
            ++p.stats.bad_frames;
        }
        post_receive(b.index);
        return;
    }
    if (p.tail - p.head == queue_cap_) {
        ++p.stats.recv_dropped;  // its reader fell behind: a full way drops
        post_receive(b.index);
        return;
    }
    b.length                       = uint32_t(len - header_bytes);
    p.queue[p.tail++ % peer_queue] = b.index;
    ++p.stats.received;
    p.stats.bytes_received += len - header_bytes;
}

void hub::on_hello(const uint8_t* raw, size_t len) {
    std::string address(reinterpret_cast<const char*>(raw), len);
    auto known = by_address_.find(address);
    uint32_t peer;
    if (known != by_address_.end()) {
        peer = known->second;  // its welcome was lost or slow: it says hello again
    } else {
        peer_state p;
        p.raw = address;
        if (fi_av_insert(fabric_->av(), raw, 1, &p.fi, 0, nullptr) != 1) {
            ++strangers_;
            return;
        }
        p.last_heard_s = p.last_sent_s = now_s();
        peers_.push_back(std::move(p));
        peer                = uint32_t(peers_.size() - 1);
        peers_[peer].number = peer + 1;
        by_address_.emplace(std::move(address), peer);
    }
    if (!peers_[peer].closed) {
        const std::string& to = peers_[peer].raw;
        (void)post_send(peer, kind::welcome, reinterpret_cast<const uint8_t*>(to.data()),
                        to.size());
    }
}

uint32_t hub::next_unaccepted() {
    progress();
    while (accepted_upto_ < peers_.size()) {
        uint32_t peer = accepted_upto_++;
        if (!peers_[peer].closed) {
            peers_[peer].accepted = true;
            return peer;
        }
    }
    return UINT32_MAX;
}

bool hub::recv(uint32_t peer, const uint8_t** frame, size_t* len) {
    peer_state& p = peers_[peer];
    if (p.held != UINT32_MAX) {
        post_receive(p.held);
        p.held = UINT32_MAX;
    }
    if (p.head == p.tail) {
        progress();
        if (p.head == p.tail) {
            return false;
        }
    }
    uint32_t index = p.queue[p.head++ % peer_queue];
    p.held         = index;
    *frame         = buffers_[index].bytes + header_bytes;
    *len           = buffers_[index].length;
    return true;
}

bool hub::alive(uint32_t peer) {
    peer_state& p = peers_[peer];
    if (!p.gone && !p.closed && now_s() - p.last_heard_s >= silent_after_s_) {
        progress();  // what came while nobody polled counts
    }
    return !p.gone && !p.closed && now_s() - p.last_heard_s < silent_after_s_;
}

void hub::keep_alive(uint32_t peer) {
    peer_state& p = peers_[peer];
    if (!p.gone && !p.closed && now_s() - p.last_sent_s > keep_alive_s_) {
        (void)post_send(peer, kind::keepalive, nullptr, 0);
    }
}

void hub::close_peer(uint32_t peer) {
    peer_state& p = peers_[peer];
    if (p.closed) {
        return;
    }
    if (!p.gone) {
        (void)post_send(peer, kind::goodbye, nullptr, 0);
    }
    if (p.held != UINT32_MAX) {
        post_receive(p.held);
        p.held = UINT32_MAX;
    }
    while (p.head != p.tail) {
        post_receive(p.queue[p.head++ % peer_queue]);
    }
    p.closed = true;
}

void hub::drain_sends(double timeout_s) {
    deadline until(timeout_s);
    while (free_sends_.size() < send_slots && !until.expired()) {
        progress();
    }
}

// Token bit 0: a frame is queued for the peer (no sleep); bit 1: sends are in flight, which
// a manual-progress provider only moves on while polled (the sleep is kept short).
uint64_t hub::arm_sleep(uint32_t peer) {
    const peer_state& p = peers_[peer];
    return (p.head != p.tail ? 1 : 0) | (free_sends_.size() < send_slots ? 2 : 0);
}

void hub::sleep(uint64_t token, int64_t timeout_ns) {
    if ((token & 1) != 0 || wait_fd_ < 0 || timeout_ns <= 0) {
        return;
    }
    // try_wait says whether completions are waiting (then no sleep) and readies the fd.
    if (!fabric_->try_wait()) {
        return;
    }
    pollfd pf{wait_fd_, POLLIN, 0};
    if ((token & 2) != 0) {
        timeout_ns = std::min(timeout_ns, max_sleep_ns_);
    }
    timespec t{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
    ::ppoll(&pf, 1, &t, nullptr);
}

}  // namespace loom::drivers::ofi::dgram
