// SPDX-License-Identifier: Apache-2.0
// The ofi endpoint: settings, open, connect (addresses through the kv_store), the fast
// path's posting entry points, cancel, close.
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "drivers/common/peer_set.hh"
#include "drivers/ofi/ofi.hh"
#include "drivers/ofi/ofi_params.hh"
#include "drivers/registry_internal.hh"

namespace loom::drivers::ofi {
namespace {

// Receive buffers over tcp;ofi_rxm when the eager limit follows rxm's buffer (64 KiB each):
// 4 MiB registered, as 256 of 16 KiB; 256 of 64 KiB made the 16 KiB to 1 MiB all-reduce no
// faster.
constexpr size_t rxm_recv_buffers = 64;

result<size_t> positive(const loom::params::int_param& param, int64_t max, int rank) {
    int64_t v = param.get();
    if (v <= 0 || v > max) {
        return invalid_argument("ofi: rank " + std::to_string(rank) + ": " +
                                std::string(param.name()) + "=" + std::to_string(v) +
                                " is out of range 1.." + std::to_string(max));
    }
    return size_t(v);
}

}  // namespace

result<settings> settings_from_params(int rank) {
    settings s;
    s.provider = params::provider.get();
    LOOM_ASSIGN(s.eager_limit, positive(params::eager_limit, int64_t{1} << 20, rank));
    LOOM_ASSIGN(s.send_queue, positive(params::send_queue, int64_t{1} << 16, rank));
    LOOM_ASSIGN(s.recv_buffers, positive(params::recv_buffers, int64_t{1} << 16, rank));
    LOOM_ASSIGN(s.max_messages, positive(params::max_messages, int64_t{1} << 24, rank));
    LOOM_ASSIGN(s.mr_cache, positive(params::mr_cache, int64_t{1} << 20, rank));
    s.rma_allowed = params::rma.get() != "off";
    return s;
}

ofi_endpoint::ofi_endpoint(const endpoint_config& config, settings s)
    : config_(config), settings_(std::move(s)) {}

result<std::unique_ptr<ofi_endpoint>> ofi_endpoint::create(const endpoint_config& config) {
    LOOM_ASSIGN(settings s, settings_from_params(config.rank));
    std::unique_ptr<ofi_endpoint> e(new ofi_endpoint(config, std::move(s)));
    LOOM_CHECK(e->open_fabric());
    return e;
}

status ofi_endpoint::open_fabric() {
    fabric_request req;
    req.ep_type = FI_EP_RDM;
    req.caps    = FI_TAGGED;
    req.wanted  = settings_.rma_allowed ? FI_RMA | FI_READ | FI_REMOTE_READ : 0;
    // Every send buffer and read may complete at once, and every receive buffer.
    req.cq_size = settings_.send_queue + settings_.recv_buffers + 1024;
    req.av_size = size_t(std::max(config_.size, 1));
    req.rank    = config_.rank;
    LOOM_ASSIGN(fabric_, fabric::open(req));
    rma_ = settings_.rma_allowed && fabric_->has(FI_RMA | FI_READ | FI_REMOTE_READ);
    // Over tcp;ofi_rxm a message up to rxm's bounce buffer takes one trip, a larger one the
    // three of a rendezvous (rxm's own, or loom's RTS, read, FIN): messages that fit go eagerly,
    // into fewer, larger receive buffers (rxm queues what comes when none is posted).
    if (fabric_->provider() == "tcp;ofi_rxm" && !params::eager_limit.is_set() &&
        rxm_buffer_bytes() > header_bytes) {
        settings_.eager_limit = std::min(rxm_buffer_bytes() - header_bytes, size_t{1} << 20);
        if (!params::recv_buffers.is_set()) {
            settings_.recv_buffers = rxm_recv_buffers;
        }
    }
    inject_limit_ =
        std::min(fabric_->info()->tx_attr->inject_size,
                 std::min(header_bytes + max_inject_payload, header_bytes + settings_.eager_limit));
    // rxd (udp;ofi_rxd, libfabric 1.17) accepted inline sends that never arrived when 10,000
    // were in flight on a loaded machine: its messages go through send buffers only.
    if (fabric_->provider().find("ofi_rxd") != std::string::npos) {
        inject_limit_ = 0;
    }

    size_t n_ops = settings_.max_messages;
    match_.open(n_ops);
    for (size_t i = 0; i < n_ops; ++i) {
        op* o        = match_.at(i);
        o->ctx.kind  = ctx_kind::op;
        o->ctx.index = uint32_t(i);
    }
    earlies_.init(settings_.max_messages);
    loop_    = std::make_unique<common::loopback>(config_.rank, common::loopback_max_ops());
    backend_ = std::make_unique<mr_backend>(fabric_.get());
    cache_.open(backend_.get(), settings_.mr_cache);
    peers_.resize(size_t(std::max(config_.size, 1)));
    size_t each = header_bytes + settings_.eager_limit;
    LOOM_ASSIGN(recv_block_, register_block(*fabric_, each, settings_.recv_buffers));
    LOOM_ASSIGN(send_block_, register_block(*fabric_, each, settings_.send_queue));
    recv_ctx_.resize(settings_.recv_buffers);
    send_ctx_.resize(settings_.send_queue);
    send_peer_.assign(settings_.send_queue, -1);
    for (size_t i = 0; i < recv_ctx_.size(); ++i) {
        recv_ctx_[i].kind  = ctx_kind::recv_buffer;
        recv_ctx_[i].index = uint32_t(i);
    }
    for (size_t i = send_ctx_.size(); i-- > 0;) {
        send_ctx_[i].kind  = ctx_kind::send_buffer;
        send_ctx_[i].index = uint32_t(i);
        free_sends_.push_back(uint32_t(i));
    }
    repost_.reserve(settings_.recv_buffers);
    held_.reserve(settings_.recv_buffers);
    outgoing_.reserve(settings_.max_messages + 1024);
    fast_ = fast_path_of(this);
    return status::ok();
}

caps ofi_endpoint::capabilities() const {
    caps c;
    c.name        = "ofi";
    c.single_copy = rma_;
    c.eager_limit = settings_.eager_limit;
    c.max_message =
        size_t(std::min<uint64_t>(fabric_->info()->ep_attr->max_msg_size, uint64_t{1} << 56));
    c.detects_peer_death = true;
    c.carrier            = fabric_->shared_memory() ? medium::shared_memory : medium::network;
    return c;
}

status ofi_endpoint::connect() {
    int rank        = config_.rank;
    std::string who = "ofi: rank " + std::to_string(rank) + ": ";
    if (connected_ || closed_) {
        return invalid_argument(who + "connect() called twice or after close()");
    }
    LOOM_ASSIGN(peer_ranks_, common::peer_set(config_, "ofi"));
    // The receive buffers go up before anyone can send to this rank.
    for (uint32_t i = 0; i < recv_ctx_.size(); ++i) {
        repost_buffer(i);
    }
    if (!peer_ranks_.empty()) {
        if (config_.store == nullptr) {
            return invalid_argument(who + "connecting to peers needs a kv_store for addresses");
        }
        std::string mine = fabric_->address() + " " + std::to_string(settings_.eager_limit) + " " +
                           fabric_->provider();
        LOOM_CHECK(config_.store->set("ofi/" + std::to_string(rank), mine)
                       .prefix(who + "publishing the address: "));
        for (int r : peer_ranks_) {
            auto v = config_.store->get("ofi/" + std::to_string(r), config_.timeout_s);
            if (!v) {
                status st = v.error();
                return st.prefix(who + "peer " + std::to_string(r) + "'s address: ");
            }
            std::string text = *v;
            size_t sp1 = text.find(' '), sp2 = text.find(' ', sp1 + 1);
            if (sp1 == std::string::npos || sp2 == std::string::npos) {
                return invalid_argument(who + "peer " + std::to_string(r) +
                                        " published a malformed address '" + text + "'");
            }
            std::string their_provider = text.substr(sp2 + 1);
            size_t their_eager         = std::strtoull(text.c_str() + sp1 + 1, nullptr, 10);
            if (their_provider != fabric_->provider() || their_eager != settings_.eager_limit) {
                return invalid_argument(
                    who + "peer " + std::to_string(r) + " uses provider " + their_provider +
                    " with LOOM_OFI_EAGER_LIMIT=" + std::to_string(their_eager) + ", this rank " +
                    fabric_->provider() + " with " + std::to_string(settings_.eager_limit) +
                    ": all ranks must agree");
            }
            LOOM_ASSIGN(fi_addr_t a, fabric_->insert(text.substr(0, sp1), r));
            peer& p      = peers_[size_t(r)];
            p.rank       = r;
            p.addr       = a;
            p.connected  = true;
            p.last_heard = now_s();
        }
    }
    LOOM_CHECK(greet_peers());
    connected_ = true;
    LOOM_LOG_INFO(
        log::subsystem::net,
        "%sprovider %s, fabric %s, domain %s, caps %s, eager <= %zu B, large by %s, "
        "mr_mode %s, waker %s, %zu peers",
        who.c_str(), fabric_->provider().c_str(), fabric_->fabric_name().c_str(),
        fabric_->domain_name().c_str(), fabric_->caps_text().c_str(), settings_.eager_limit,
        rma_ ? "rma read" : "clear-to-send + tagged send", fabric_->mr_mode_text().c_str(),
        fabric_->wait_fd() >= 0 ? "cq wait fd" : "none (callers nap)", peer_ranks_.size());
    return status::ok();
}

// Every peer says hello and hears one: connection-oriented providers (tcp;ofi_rxm) set up
// their connections here rather than on the first message, and a peer that cannot be
// reached is an error of connect(), naming it, its address and the provider.
status ofi_endpoint::greet_peers() {
    for (int r : peer_ranks_) {
        send_internal(r, msg_kind::ping, 0, 0, 0);
    }
    double give_up = now_s() + config_.timeout_s;
    for (;;) {
        progress();
        std::string silent;
        for (int r : peer_ranks_) {
            const peer& p = peers_[size_t(r)];
            if (p.failed) {
                return status(LOOM_ERR_PEER_FAILURE, p.error.message());
            }
            if (!p.heard) {
                silent += (silent.empty() ? "" : ", ") + std::to_string(r);
            }
        }
        if (silent.empty()) {
            return status::ok();
        }
        if (now_s() > give_up) {
            return status(LOOM_ERR_PEER_FAILURE,
                          "ofi: rank " + std::to_string(config_.rank) + ": no word from peer(s) " +
                              silent + " over " + fabric_->provider() + " (this rank at " +
                              fabric_->fabric_name() + "/" + fabric_->domain_name() + ") within " +
                              std::to_string(int(config_.timeout_s)) + " s");
        }
    }
}

const status& ofi_endpoint::peer_status(int peer) const {
    if (peer < 0 || size_t(peer) >= peers_.size()) {
        return ok_;
    }
    return peers_[size_t(peer)].error;
}

loom_status_t ofi_endpoint::post_send(int to, uint64_t tag, uint64_t imm, const void* buf,
                                      size_t len, uint64_t cookie) {
    if (to == config_.rank) {
        return loop_->post_send(tag, imm, buf, len, cookie);
    }
    if (to < 0 || size_t(to) >= peers_.size() || !peers_[size_t(to)].connected) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(to)];
    if ((tag & control_tag_bit) != 0) {  // no completion of its own
        if (p.failed) {
            return LOOM_SUCCESS;
        }
        (void)send_header(to, header(msg_kind::control, tag, imm, 0, 0), nullptr, 0);
        return LOOM_SUCCESS;
    }
    op* o = match_.take(to, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    o->is_send = true;
    if (p.failed) {
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
        return LOOM_SUCCESS;
    }
    if (len <= settings_.eager_limit) {
        wire_header h = header(msg_kind::eager, tag, imm, len, 0);
        if (inject_eager(to, h, buf, len)) {
            complete_op(o, LOOM_SUCCESS, len);
            return LOOM_SUCCESS;
        }
        int rc = send_header(to, h, buf, len);
        if (rc == -FI_EAGAIN) {
            match_.release(o);
            return LOOM_ERR_NO_RESOURCE;
        }
        // Copied into a send buffer: the user's is free again.
        complete_op(o, LOOM_SUCCESS, len);
        return LOOM_SUCCESS;
    }
    auto r = cache_.acquire(buf, len);
    if (!r) {
        match_.release(o);
        return r.error().code() == LOOM_ERR_NO_RESOURCE ? LOOM_ERR_NO_RESOURCE : LOOM_ERR_SYSTEM;
    }
    o->mr           = *r;
    wire_header h   = header(msg_kind::rts, tag, imm, len, o->ctx.index);
    uintptr_t where = reinterpret_cast<uintptr_t>(buf);
    h.addr          = fabric_->virt_addr() ? where : where - o->mr->base;
    h.key           = fi_mr_key(o->mr->handle);
    o->state        = op_state::awaiting_fin;
    p.active.push_back(o);
    (void)send_header(to, h, nullptr, 0);  // a header alone always queues
    return LOOM_SUCCESS;
}

loom_status_t ofi_endpoint::post_recv(int from, uint64_t tag, uint64_t imm, void* buf, size_t len,
                                      uint64_t cookie) {
    if ((tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;  // control notices are never matched
    }
    if (from == config_.rank) {
        return loop_->post_recv(tag, imm, buf, len, cookie);
    }
    if (from < 0 || size_t(from) >= peers_.size() || !peers_[size_t(from)].connected) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(from)];
    op* o   = match_.take(from, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    o->is_send = false;
    o->revoked = false;
    if (early* e = p.match.take_early(tag)) {
        if (e->kind == msg_kind::eager) {
            if (e->len != len || e->imm != imm) {
                match_.complete_mismatch(o, e->imm);
            } else {
                if (len != 0) {  // an empty receive may have no buffer
                    std::memcpy(buf, e->payload.data(), len);
                }
                o->imm = e->imm;
                complete_op(o, LOOM_SUCCESS, len);
            }
        } else {
            match_rendezvous(p, o, e->imm, e->len, e->addr, e->key, e->send_id);
        }
        earlies_.put(e);
        return LOOM_SUCCESS;
    }
    if (const early* c = p.match.early_contradicting(tag, imm)) {
        match_.complete_mismatch(o, c->imm);
        return LOOM_SUCCESS;
    }
    if (p.failed) {
        complete_op(o, LOOM_ERR_PEER_FAILURE, 0);
        return LOOM_SUCCESS;
    }
    o->state = op_state::posted;
    p.match.posted.push_back(o);
    return LOOM_SUCCESS;
}

template <class Done>
bool ofi_endpoint::progress_until(peer& p, double seconds, Done done) {
    double give_up = now_s() + seconds;
    while (!done() && !p.failed) {
        progress();
        if (now_s() > give_up) {
            return false;
        }
    }
    return true;
}

bool ofi_endpoint::cancel_send(op* o) {
    peer& p = peers_[size_t(o->peer)];
    if (o->state == op_state::awaiting_start) {  // its CTS came, its send waits for room
        waiting_.remove(o);
        p.active.push_back(o);
        o->state = op_state::awaiting_fin;
    }
    if (o->state == op_state::awaiting_fin) {
        // The receiver may be reading the buffer (and the provider serves the read from it
        // while this rank makes progress): it is told, and cancel waits for its answer. A
        // receiver that does not answer within the timeout has failed, and loses access.
        o->cancelled = true;
        send_internal(o->peer, msg_kind::revoke, o->tag, o->imm, o->ctx.index);
        if (!progress_until(p, config_.timeout_s, [&] { return o->state == op_state::idle; })) {
            if (o->mr != nullptr) {
                cache_.revoke(o->mr);
            }
            fail_peer(p, "no answer to a cancelled send within the timeout");
        }
        return true;
    }
    if (o->state == op_state::direct_send) {
        // libfabric reads the buffer until the send completes: wait for it.
        o->cancelled = true;
        if (!progress_until(p, config_.timeout_s, [&] { return o->state == op_state::idle; })) {
            fail_peer(p, "a cancelled send did not finish within the timeout");
        }
        return true;
    }
    return false;
}

bool ofi_endpoint::cancel_recv(op* o) {
    peer& p = peers_[size_t(o->peer)];
    switch (o->state) {
        case op_state::posted:
            p.match.posted.remove(o);
            o->state = op_state::idle;
            match_.release(o);
            return true;
        case op_state::awaiting_start:
            waiting_.remove(o);
            if (o->mr != nullptr) {
                cache_.release(o->mr);
                o->mr = nullptr;
            }
            // The sender still waits for an answer: nothing was read.
            send_internal(o->peer, msg_kind::nack, o->tag, o->imm, o->remote_id);
            o->state = op_state::idle;
            match_.release(o);
            return true;
        case op_state::direct_recv:
            fi_cancel(&fabric_->ep()->fid, &o->ctx);
            [[fallthrough]];
        case op_state::reading:
            // The transfer into the user's buffer runs: wait for it, then drop the result.
            o->cancelled = true;
            if (!progress_until(p, config_.timeout_s, [&] { return o->state == op_state::idle; })) {
                fail_peer(p, "a cancelled receive did not finish within the timeout");
            }
            return true;
        default:
            return false;
    }
}

bool ofi_endpoint::cancel(uint64_t cookie) {
    if (loop_->cancel(cookie)) {
        return true;
    }
    op* o = match_.find_pending(cookie);
    if (o == nullptr) {
        return false;
    }
    return o->is_send ? cancel_send(o) : cancel_recv(o);
}

void ofi_endpoint::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    if (connected_) {
        for (int r : peer_ranks_) {
            if (!peers_[size_t(r)].failed) {
                send_internal(r, msg_kind::bye, 0, 0, 0);
            }
        }
        // Let the goodbyes go (bounded: a dead peer never takes them).
        double give_up = now_s() + 0.5;
        while ((outgoing_head_ < outgoing_.size() || free_sends_.size() < send_ctx_.size()) &&
               now_s() < give_up) {
            progress();
        }
        for (int r : peer_ranks_) {
            if (!peers_[size_t(r)].failed) {
                fail_peer(peers_[size_t(r)], "this endpoint closed", true);
            }
        }
    }
    if (loop_ != nullptr) {  // null when the endpoint failed to open
        loop_->fail_all(LOOM_ERR_PEER_FAILURE);
    }
    cache_.clear();
    fabric_.reset();  // the endpoint first: nothing completes into the buffers any more
    release_block(recv_block_);
    release_block(send_block_);
    if (bell_fd_ >= 0) {
        ::close(bell_fd_);
        bell_fd_ = -1;
    }
}

ofi_endpoint::~ofi_endpoint() {
    close();
}

}  // namespace loom::drivers::ofi

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_ofi(const endpoint_config& config) {
    LOOM_ASSIGN(auto e, ofi::ofi_endpoint::create(config));
    return std::unique_ptr<endpoint>(std::move(e));
}

}  // namespace loom::drivers
