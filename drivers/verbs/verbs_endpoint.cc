// SPDX-License-Identifier: Apache-2.0
// The verbs endpoint: open, connect, the fast-path entry points (post send, post receive,
// poll), cancel, peer failure and close.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "drivers/common/peer_set.hh"
#include "drivers/registry_internal.hh"
#include "drivers/verbs/verbs.hh"

namespace loom::drivers {
namespace verbs {

verbs_endpoint::verbs_endpoint(const endpoint_config& config, settings s, const verbs_api& api)
    : config_(config),
      settings_(std::move(s)),
      api_(api),
      peers_(size_t(config.size)),
      loop_(std::make_unique<common::loopback>(config.rank, common::loopback_max_ops())),
      errors_(size_t(config.size)) {
    fast_ = fast_path_of(this);
}

verbs_endpoint::~verbs_endpoint() {
    close();
}

result<std::unique_ptr<verbs_endpoint>> verbs_endpoint::create(const endpoint_config& config,
                                                               const verbs_api& api) {
    if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
        return invalid_argument("verbs: rank " + std::to_string(config.rank) +
                                " is not a rank of a job of size " + std::to_string(config.size));
    }
    if (!(config.timeout_s > 0)) {
        return invalid_argument("verbs: rank " + std::to_string(config.rank) +
                                ": the connect timeout must be positive");
    }
    LOOM_ASSIGN(settings s, settings_from_params());
    auto ep = std::unique_ptr<verbs_endpoint>(new verbs_endpoint(config, std::move(s), api));
    LOOM_CHECK(ep->open_device());
    return ep;
}

caps verbs_endpoint::capabilities() const {
    caps c;
    c.name               = "verbs";
    c.single_copy        = true;  // large messages: one RDMA write, user buffer to user buffer
    c.eager_limit        = settings_.eager_limit;
    c.max_message        = uint64_t(1) << 31;  // one write request: a 32-bit byte count
    c.detects_peer_death = true;
    c.carrier            = medium::network;
    return c;
}

const status& verbs_endpoint::peer_status(int peer) const {
    if (peer < 0 || peer >= config_.size || !peers_[size_t(peer)].failed) {
        return ok_;
    }
    return errors_[size_t(peer)];
}

status verbs_endpoint::connect() {
    std::string who = "verbs: rank " + std::to_string(config_.rank) + ": ";
    if (connected_ || closed_) {
        return invalid_argument(who + "connect() called twice or after close()");
    }
    LOOM_ASSIGN(peer_ranks_, common::peer_set(config_, "verbs"));
    if (!peer_ranks_.empty() && config_.store == nullptr) {
        return invalid_argument(who + "connecting to peers needs a kv_store for addresses");
    }
    match_.open(settings_.max_ops + control_reserve);
    // Copied early arrivals (at most max_ops), those left in their receive buffer, and the
    // rendezvous requests of every send the peers may have out.
    early_.init(settings_.max_ops +
                peer_ranks_.size() * (settings_.recv_depth + settings_.send_queue));
    LOOM_CHECK(create_rings());
    send_slot_op_.assign(peer_ranks_.size() * 2 * settings_.send_queue, nullptr);
    LOOM_CHECK(create_queue_pairs());
    if (!peer_ranks_.empty()) {
        LOOM_CHECK(exchange_and_connect());
    }
    connected_ = true;
    LOOM_LOG_INFO(log::subsystem::net,
                  "verbs: rank %d: device %s port %u (%s), %zu queue pairs, eager limit %llu B",
                  config_.rank, device_name_.c_str(), unsigned(port_.port),
                  port_.gid_index >= 0 ? "GID" : "LID", peer_ranks_.size(),
                  static_cast<unsigned long long>(settings_.eager_limit));
    return {};
}

void verbs_endpoint::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    if (connected_) {
        say_goodbye();
    }
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (!p.failed) {
            fail_peer(p, "the endpoint closed");
        }
    }
    loop_->fail_all(LOOM_ERR_PEER_FAILURE);
    for (size_t i = 0; i < match_.size(); ++i) {
        op* o = match_.at(i);
        if (o->copy_mr != nullptr) {
            api_.dereg_mr(o->copy_mr);
            o->copy_mr = nullptr;
        }
    }
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (p.qp != nullptr) {
            api_.destroy_qp(p.qp);
            p.qp = nullptr;
        }
    }
    cache_.clear();
    if (recv_mr_ != nullptr) {
        api_.dereg_mr(recv_mr_);
    }
    if (send_mr_ != nullptr) {
        api_.dereg_mr(send_mr_);
    }
    recv_mr_ = send_mr_ = nullptr;
    if (cq_ != nullptr) {
        api_.destroy_cq(cq_);
        cq_ = nullptr;
    }
    if (channel_ != nullptr) {
        api_.destroy_comp_channel(channel_);
        channel_ = nullptr;
    }
    if (bell_fd_ >= 0) {
        ::close(bell_fd_);
        bell_fd_ = -1;
    }
    if (pd_ != nullptr) {
        api_.dealloc_pd(pd_);
        pd_ = nullptr;
    }
    if (ctx_ != nullptr) {
        api_.close_device(ctx_);
        ctx_ = nullptr;
    }
}

// ---- fast path ----

op* verbs_endpoint::take(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                         uint64_t cookie) {
    if (match_.in_use() >= settings_.max_ops) {
        return nullptr;  // the rest is kept for control notices
    }
    return match_.take(peer, tag, imm, buf, len, cookie);
}

void verbs_endpoint::complete(op* o, loom_status_t st, size_t bytes) {
    if (is_send(o)) {
        --peers_[size_t(o->peer)].sends_outstanding;
    }
    if (o->mr != nullptr) {
        cache_.release(o->mr);
        o->mr = nullptr;
    }
    if (o->copy_mr != nullptr) {
        api_.dereg_mr(o->copy_mr);
        o->copy_mr = nullptr;
    }
    o->copy.reset();
    if (o->cancelled) {
        match_.release(o);  // withdrawn: nobody is told
        return;
    }
    match_.complete(o, st, bytes);
}

loom_status_t verbs_endpoint::post_send(int peer_rank, uint64_t tag, uint64_t imm, const void* buf,
                                        size_t len, uint64_t cookie) {
    bool control = (tag & control_tag_bit) != 0;
    if (closed_ || !connected_ || (buf == nullptr && len > 0 && !control) ||
        len > capabilities().max_message) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (peer_rank == config_.rank) {
        return loop_->post_send(tag, imm, buf, len, cookie);
    }
    if (peer_rank < 0 || peer_rank >= config_.size || peers_[size_t(peer_rank)].qp == nullptr) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(peer_rank)];
    if (p.failed) {
        if (control) {
            return LOOM_ERR_PEER_FAILURE;
        }
        op* o = take(peer_rank, tag, imm, buf, len, cookie);
        if (o == nullptr) {
            return LOOM_ERR_NO_RESOURCE;
        }
        o->state = op_state::recv_posted;  // not counted among the peer's sends
        match_.complete(o, LOOM_ERR_PEER_FAILURE, 0);
        return LOOM_SUCCESS;
    }
    if (p.free_sends.empty() || (!control && p.sends_outstanding >= settings_.send_queue)) {
        return LOOM_ERR_NO_RESOURCE;
    }
    uint32_t slot = p.free_sends.back();
    wire_header h{};
    h.tag = tag;
    h.imm = imm;
    if (control) {
        // One header and no operation: a control notice produces no send completion.
        h.type = uint32_t(msg_type::control);
        std::memcpy(send_buf(slot), &h, sizeof h);
        p.free_sends.pop_back();
        send_slot_op_[slot] = nullptr;
        return post_buf(p, slot, sizeof h) ? LOOM_SUCCESS : LOOM_ERR_PEER_FAILURE;
    }
    op* o = take(peer_rank, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    p.free_sends.pop_back();
    ++p.sends_outstanding;
    h.len = len;
    if (len <= settings_.eager_limit) {
        o->state = op_state::send_eager;
        h.type   = uint32_t(msg_type::eager);
        std::memcpy(send_buf(slot), &h, sizeof h);
        if (len > 0) {
            std::memcpy(send_buf(slot) + sizeof h, buf, len);
        }
        send_slot_op_[slot] = o;
    } else {
        o->state            = op_state::send_rts;
        h.type              = uint32_t(msg_type::rts);
        h.token             = index(o);
        send_slot_op_[slot] = nullptr;
        std::memcpy(send_buf(slot), &h, sizeof h);
    }
    post_buf(p, slot, sizeof h + (len <= settings_.eager_limit ? len : 0));
    return LOOM_SUCCESS;
}

loom_status_t verbs_endpoint::post_recv(int peer_rank, uint64_t tag, uint64_t imm, void* buf,
                                        size_t len, uint64_t cookie) {
    if (closed_ || !connected_ || (buf == nullptr && len > 0) || (tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (peer_rank == config_.rank) {
        return loop_->post_recv(tag, imm, buf, len, cookie);
    }
    if (peer_rank < 0 || peer_rank >= config_.size || peers_[size_t(peer_rank)].qp == nullptr) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(peer_rank)];
    op* o   = take(peer_rank, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    o->state = op_state::recv_posted;
    if (early_msg* e = p.match.take_early(tag)) {
        if (e->type == msg_type::eager) {
            const char* payload =
                e->slot >= 0 ? recv_buf(uint32_t(e->slot)) + sizeof(wire_header) : e->data.data();
            if (agrees(o, e->len, e->imm)) {
                if (e->len > 0) {
                    std::memcpy(buf, payload, e->len);
                }
                complete(o, LOOM_SUCCESS, e->len);
            }
            if (e->slot < 0) {
                held_bytes_ -= e->len;
            } else if (!p.failed) {
                repost(p, uint32_t(e->slot));
            }
        } else if (p.failed) {
            complete(o, LOOM_ERR_PEER_FAILURE, 0);
        } else if (agrees(o, e->len, e->imm)) {
            clear_to_send(p, o, e->token);
        } else {
            wire_header nack{};
            nack.type  = uint32_t(msg_type::nack);
            nack.tag   = e->tag;
            nack.token = e->token;
            reply(p, nack);
        }
        early_.put(e);
        return LOOM_SUCCESS;
    }
    if (p.failed) {
        complete(o, LOOM_ERR_PEER_FAILURE, 0);
    } else if (const early_msg* other = p.match.early_contradicting(tag, imm)) {
        match_.complete_mismatch(o, other->imm);
    } else {
        p.match.posted.push_back(o);
    }
    return LOOM_SUCCESS;
}

int verbs_endpoint::poll(completion* out, int max) {
    if (connected_ && !closed_) {
        progress();
    }
    int got = match_.harvest(out, max);
    if (got < max) {
        got += loop_->poll(out + got, max - got);
    }
    return got;
}

// ---- failure ----

void verbs_endpoint::say_goodbye() {
    constexpr double grace_s = 0.2;  // a goodbye that cannot go is not waited for longer
    int going                = 0;
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (!p.failed && !p.free_sends.empty()) {
            uint32_t slot = p.free_sends.back();
            p.free_sends.pop_back();
            wire_header h{};
            h.type = uint32_t(msg_type::bye);
            std::memcpy(send_buf(slot), &h, sizeof h);
            send_slot_op_[slot] = nullptr;
            going += post_buf(p, slot, sizeof h) ? 1 : 0;
        }
    }
    // Each goodbye's completion returns its buffer: done when every peer has all of its
    // send buffers back (or has failed).
    double deadline = now_s() + grace_s;
    auto all_back   = [&] {
        for (int r : peer_ranks_) {
            const peer& p = peers_[size_t(r)];
            if (!p.failed && p.free_sends.size() < settings_.send_queue) {
                return false;
            }
        }
        return true;
    };
    while (going > 0 && !all_back() && now_s() < deadline) {
        progress();
    }
}

void verbs_endpoint::fail_peer(peer& p, const std::string& why, bool graceful) {
    if (p.failed) {
        return;
    }
    p.failed = true;
    errors_[size_t(p.rank)] =
        status(LOOM_ERR_PEER_FAILURE, "verbs: rank " + std::to_string(config_.rank) + ": peer " +
                                          std::to_string(p.rank) + " failed: " + why);
    if (graceful) {
        LOOM_LOG_INFO(log::subsystem::net, "%s", errors_[size_t(p.rank)].message().c_str());
    } else if (!closed_) {
        LOOM_LOG_ERROR(log::subsystem::net, "%s", errors_[size_t(p.rank)].message().c_str());
    }
    // The queue pair to the error state: nothing it has posted runs any more, and no write
    // of the peer's can land in a buffer this rank has given back.
    if (p.qp != nullptr) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        api_.modify_qp(p.qp, &a, IBV_QP_STATE);
    }
    while (op* o = p.match.posted.pop_front()) {
        complete(o, LOOM_ERR_PEER_FAILURE, 0);
    }
    for (size_t i = 0; i < match_.size(); ++i) {
        op* o = match_.at(i);
        if (!o->idle && o->peer == p.rank && o->state != op_state::recv_posted) {
            complete(o, LOOM_ERR_PEER_FAILURE, 0);
        }
    }
    p.replies_waiting.clear();
}

// ---- cancel ----

bool verbs_endpoint::drive_until_idle(op* o, double timeout_s) {
    double deadline = now_s() + timeout_s;
    // A finished operation goes back to the pool, and may be taken again at once (by a
    // control notice): it is ours while it is busy and still cancelled.
    while (!o->idle && o->cancelled) {
        progress();
        if (now_s() > deadline) {
            return false;
        }
    }
    return true;
}

bool verbs_endpoint::cancel_send(op* o) {
    peer& p = peers_[size_t(o->peer)];
    switch (o->state) {
        case op_state::send_eager:  // its bytes are in a send buffer already
            o->cancelled = true;
            return true;
        case op_state::send_rts: {
            // The receiver may clear it any time: it goes on from a copy of the message.
            o->copy = std::make_unique<char[]>(o->len);
            std::memcpy(o->copy.get(), o->buf, o->len);
            o->copy_mr = api_.reg_mr(pd_, o->copy.get(), o->len,
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
            if (o->copy_mr == nullptr) {
                fail_peer(p, "cannot register a cancelled message's copy");
            }
            o->buf       = o->copy.get();
            o->cancelled = true;
            return true;
        }
        case op_state::send_writing:
            // The HCA reads the user's buffer until the peer acknowledges the write.
            o->cancelled = true;
            if (!drive_until_idle(o, config_.timeout_s)) {
                fail_peer(p, "a cancelled write was not acknowledged in time");
            }
            return true;
        default:
            return false;
    }
}

bool verbs_endpoint::cancel_recv(op* o) {
    peer& p = peers_[size_t(o->peer)];
    if (o->state == op_state::recv_posted) {
        p.match.posted.remove(o);
        o->cancelled = true;
        complete(o, LOOM_SUCCESS, 0);
        return true;
    }
    // Its CTS is out: the peer's write lands in the buffer; wait for it, or fail the peer so
    // that no write can land after cancel returns.
    o->cancelled = true;
    if (!drive_until_idle(o, config_.timeout_s)) {
        fail_peer(p, "the write into a cancelled receive did not come in time");
    }
    return true;
}

bool verbs_endpoint::cancel(uint64_t cookie) {
    if (loop_->cancel(cookie)) {
        return true;
    }
    op* o = match_.find_pending(cookie);
    if (o == nullptr) {
        return false;
    }
    return is_send(o) ? cancel_send(o) : cancel_recv(o);
}

result<std::unique_ptr<endpoint>> open_with(const endpoint_config& config, const verbs_api& api) {
    LOOM_ASSIGN(auto ep, verbs_endpoint::create(config, api));
    return std::unique_ptr<endpoint>(std::move(ep));
}

}  // namespace verbs

result<std::unique_ptr<endpoint>> open_verbs(const endpoint_config& config) {
    return verbs::open_with(config, verbs::current_verbs_api());
}

}  // namespace loom::drivers
