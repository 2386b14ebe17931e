// SPDX-License-Identifier: Apache-2.0
// The forwarding wrapper's endpoint glue (forward_endpoint.hh): open, connect, the
// fast-path entry points, poll and cancel, and the pool of user operations.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "base/check.hh"
#include "drivers/forward/forward_endpoint.hh"
#include "drivers/forward/forward_params.hh"
#include "drivers/registry_internal.hh"
#include "routing/dor.hh"
#include "routing/routing_params.hh"

namespace loom::drivers {
namespace forward {

forward_endpoint::forward_endpoint(std::unique_ptr<endpoint> inner, const forward_config& c,
                                   const topology::shape& s, routing::tie_rule ties, int rank)
    : wrapper_endpoint(std::move(inner), "fwd:"),
      cfg_(c),
      shape_(s),
      table_(routing::route_table::build(s, rank, ties, routing::vc_policy::dateline)),
      rank_(rank),
      retry_(c.max_ops),
      stalled_(size_t(c.headers) * 8),
      done_(c.max_ops) {
    fast_ = fast_path_of(this);
    link_of_.assign(size_t(s.size()), -1);
    for (int p : s.neighbours(rank)) {
        link_of_[size_t(p)] = int(links_.size());
        link_state l;
        l.peer = p;
        l.dim  = table_.to(p).dim;
        l.hdr.resize(c.headers);
        l.hdr_seq.resize(c.headers);
        l.stat.peer = p;
        links_.push_back(std::move(l));
    }
    ops_.resize(c.max_ops);
    chunks_.resize(c.max_ops);
    msgs_.resize(c.max_ops);
    for (uint32_t i = c.max_ops; i-- > 0;) {
        free_ops_.push_back(int(i));
        free_chunks_.push_back(i);
        free_msgs_.push_back(int(i));
    }
    int ports = 1;
    for (const routing::route_entry& e : table_.entries()) {
        ports = std::max(ports, int(e.port) + 1);
    }
    vcs_           = routing::vc_count(s, routing::vc_policy::dateline);
    size_t classes = size_t(ports * vcs_);
    per_class_     = std::max<uint32_t>(2, c.buffers / uint32_t(classes));
    free_bufs_.resize(classes);
    waiting_.resize(classes, fifo<uint32_t>(64));
    for (uint32_t i = 0; i < per_class_ * classes; ++i) {
        bufs_.push_back(std::make_unique_for_overwrite<uint8_t[]>(c.chunk));
    }
    for (size_t k = 0; k < classes; ++k) {
        for (uint32_t i = per_class_; i-- > 0;) {
            free_bufs_[k].push_back(int(k * per_class_ + i));
        }
    }
    sink_ = std::make_unique_for_overwrite<uint8_t[]>(c.chunk);
    sends_.reserve(c.max_ops);
    sources_.resize(size_t(s.size()));
    early_store_.reserve(c.max_ops);
    free_early_.reserve(c.max_ops);
}

caps forward_endpoint::capabilities() const {
    caps c        = inner_->capabilities();
    c.direct      = c.name;  // the inner driver: what a split child opens instead
    c.name        = name_.c_str();
    c.single_copy = false;  // a routed payload is copied at every router
    c.forwards    = true;
    return c;
}

status forward_endpoint::connect() {
    LOOM_CHECK(inner_->connect());
    for (size_t l = 0; l < links_.size(); ++l) {
        for (uint32_t s = 0; s < cfg_.headers; ++s) {
            links_[l].hdr_seq[s] = links_[l].rx_seq++;
            post_header_rx(int(l), s);
        }
    }
    return status::ok();
}

void forward_endpoint::post_header_rx(int link, uint32_t slot) {
    link_state& l      = links_[size_t(link)];
    const fast_path& f = inner_->fast();
    // Header receives are few and fixed: the inner queue has room for them (a refusal here
    // would lose the link, so it is retried until accepted).
    while (f.post_recv(f.ctx, l.peer, tag_hdr(l.hdr_seq[slot]), 0, &l.hdr[slot], sizeof(header),
                       cookie_of(k_hdr_rx, uint64_t(link) * cfg_.headers + slot)) ==
           LOOM_ERR_NO_RESOURCE) {
        completion c[16];
        int n = f.poll(f.ctx, c, 16);
        for (int i = 0; i < n; ++i) {
            handle(c[i]);
        }
    }
}

int forward_endpoint::take_op() {
    if (free_ops_.empty()) {
        return -1;
    }
    int i = free_ops_.back();
    free_ops_.pop_back();
    ops_[size_t(i)]      = user_op{};
    ops_[size_t(i)].live = true;
    ++live_ops_;
    return i;
}

void forward_endpoint::release_op(int i) {
    user_op& o = ops_[size_t(i)];
    unlist_recv(i);
    o.live = false;
    o.copy.reset();
    free_ops_.push_back(i);
    --live_ops_;
}

// Queues the completion of op i (unless cancelled) and frees it.
void forward_endpoint::finish(int i, const completion& c) {
    user_op& o = ops_[size_t(i)];
    if (!o.cancelled) {
        completion d = c;
        d.cookie     = o.cookie;
        done_.push_back(d);
    }
    release_op(i);
}

loom_status_t forward_endpoint::post_send(int peer, uint64_t tag, uint64_t imm, const void* buf,
                                          size_t len, uint64_t cookie) {
    if (peer < 0 || peer >= shape_.size()) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    stirred_.store(true, std::memory_order_relaxed);
    bool control = (tag & control_tag_bit) != 0;
    if (peer == rank_) {
        if (control) {
            const fast_path& f = inner_->fast();
            return f.post_send(f.ctx, peer, tag, imm, buf, len, cookie);
        }
        int i = take_op();
        if (i < 0) {
            return LOOM_ERR_NO_RESOURCE;
        }
        ops_[size_t(i)].kind   = op_kind::self;
        ops_[size_t(i)].cookie = cookie;
        const fast_path& f     = inner_->fast();
        loom_status_t st       = f.post_send(f.ctx, peer, tag, imm, buf, len, cookie_of(k_self, i));
        if (st != LOOM_SUCCESS) {
            release_op(i);
        }
        return st;
    }
    if (!control && buf == nullptr && len > 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (control) {
        int c = take_chunk();
        if (c < 0) {
            return LOOM_ERR_NO_RESOURCE;
        }
        chunk& k = chunks_[size_t(c)];
        k.h      = header{rank_, peer, tag, imm, 0, 0, 0, flag_control};
        start_tx(uint32_t(c));
        return LOOM_SUCCESS;
    }
    int i = take_op();
    if (i < 0) {
        return LOOM_ERR_NO_RESOURCE;
    }
    user_op& o = ops_[size_t(i)];
    o.kind     = op_kind::send;
    o.cookie   = cookie;
    o.peer     = peer;
    o.tag      = tag;
    o.imm      = imm;
    o.src      = static_cast<const uint8_t*>(buf);
    o.len      = len;
    sends_.push_back(i);
    pump();
    return LOOM_SUCCESS;
}

void forward_endpoint::handle(const completion& c) {
    if (c.cookie == control_cookie) {
        done_.push_back(c);  // a notice from a neighbour sent to itself: not ours, pass on
        return;
    }
    auto k     = kind(c.cookie >> 56);
    uint64_t i = c.cookie & ((uint64_t{1} << 56) - 1);
    switch (k) {
        case k_hdr_rx:
            on_header(int(i / cfg_.headers), uint32_t(i % cfg_.headers), c.status);
            break;
        case k_pay_rx:
            rx_done(uint32_t(i), c.status, c.withdrawn);
            break;
        case k_tx_hdr:
        case k_tx_pay:
            tx_done(uint32_t(i), c.status);
            break;
        case k_self:
            finish(int(i), c);
            break;
    }
}

loom_status_t forward_endpoint::post_recv(int peer, uint64_t tag, uint64_t imm, void* buf,
                                          size_t len, uint64_t cookie) {
    if (peer < 0 || peer >= shape_.size() || (buf == nullptr && len > 0)) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    int i = take_op();
    if (i < 0) {
        return LOOM_ERR_NO_RESOURCE;
    }
    user_op& o = ops_[size_t(i)];
    o.cookie   = cookie;
    stirred_.store(true, std::memory_order_relaxed);
    if (peer == rank_) {
        o.kind             = op_kind::self;
        const fast_path& f = inner_->fast();
        loom_status_t st   = f.post_recv(f.ctx, peer, tag, imm, buf, len, cookie_of(k_self, i));
        if (st != LOOM_SUCCESS) {
            release_op(i);
        }
        return st;
    }
    o.kind = op_kind::recv;
    o.peer = peer;
    o.tag  = tag;
    o.imm  = imm;
    o.dst  = static_cast<uint8_t*>(buf);
    o.len  = len;
    match_posted(i);
    return LOOM_SUCCESS;
}

int forward_endpoint::poll(completion* out, int max) {
    const fast_path& f = inner_->fast();
    completion c[32];
    bool handled = false;
    for (int round = 0; round < 4; ++round) {
        int n = f.poll(f.ctx, c, 32);
        for (int j = 0; j < n; ++j) {
            handle(c[j]);
        }
        handled |= n > 0;
        if (n < 32) {
            break;
        }
    }
    for (size_t n = retry_.size(); n > 0; --n) {
        uint32_t k = retry_.front();
        retry_.pop_front();
        bool ok = chunks_[k].state == ch_state::tx ? try_tx(k) : try_rx(k);
        if (!ok) {
            retry_.push_back(k);
        }
    }
    pump();
    stirred_.store(handled, std::memory_order_relaxed);
    int got = 0;
    while (got < max && !done_.empty()) {
        out[got++] = done_.front();
        done_.pop_front();
    }
    return got;
}

uint64_t forward_endpoint::arm_sleep() {
    // Refused posts (retry_) and chunks waiting for a buffer or an entry move on in poll()
    // when the inner driver frees room, which rings nothing: keep such a sleep as short as
    // a nap.
    constexpr int64_t retry_sleep_ns = 50'000;
    sleep_cap_ns_                    = INT64_MAX;
    if (!done_.empty()) {
        sleep_cap_ns_ = 0;
    } else if (!retry_.empty() || !stalled_.empty() || waiting_chunks_ > 0) {
        sleep_cap_ns_ = retry_sleep_ns;
    }
    return arm_inner();
}

bool forward_endpoint::pending() const {
    return live_ops_ > 0 || !done_.empty() || !retry_.empty() || !stalled_.empty() ||
           live_chunks_ > 0;
}

bool forward_endpoint::cancel(uint64_t cookie) {
    auto it = std::ranges::find_if(
        ops_, [&](const user_op& o) { return o.live && !o.cancelled && o.cookie == cookie; });
    if (it == ops_.end()) {
        return false;
    }
    int i      = index_of(&*it);
    user_op& o = *it;
    if (o.kind == op_kind::self) {
        const fast_path& f = inner_->fast();
        if (!f.cancel(f.ctx, cookie_of(k_self, uint64_t(i)))) {
            return false;
        }
        release_op(i);
        return true;
    }
    if (o.kind == op_kind::send) {
        withdraw_send(i);
        return true;
    }
    withdraw_recv(i);
    return true;
}

std::vector<link_stat> forward_endpoint::stats() const {
    std::vector<link_stat> v(links_.size());
    std::ranges::transform(links_, v.begin(), &link_state::stat);
    return v;
}

result<forward_config> config_from_params(const std::string& fabric) {
    forward_config c;
    c.fabric      = fabric.empty() ? routing::params::fabric.get() : fabric;
    c.ties        = routing::params::route_ties.get();
    int64_t chunk = params::chunk.get();
    int64_t bufs  = params::buffers.get();
    int64_t ops   = params::max_ops.get();
    if (chunk < 1 || chunk > (int64_t{1} << 30) || bufs < 1 || bufs > (int64_t{1} << 20) ||
        ops < 16 || ops > (int64_t{1} << 24)) {
        return invalid_argument(
            "LOOM_FWD_CHUNK must lie in 1..2^30, LOOM_FWD_BUFFERS in "
            "1..2^20 and LOOM_FWD_MAX_OPS in 16..2^24");
    }
    c.max_ops = uint32_t(ops);
    c.chunk   = size_t(chunk);
    c.buffers = uint32_t(bufs);
    return c;
}

result<std::unique_ptr<endpoint>> open(std::string_view inner_name, const endpoint_config& config) {
    LOOM_ASSIGN(auto c, config_from_params(config.fabric));
    if (c.fabric.empty()) {
        return invalid_argument(
            "fwd: no fabric: set endpoint_config.fabric or LOOM_FABRIC "
            "(torus:…, mesh:…, ring:…)");
    }
    LOOM_ASSIGN(auto s, topology::shape::parse(c.fabric));
    if (s.size() != config.size) {
        return invalid_argument("fwd: fabric " + c.fabric + " has " + std::to_string(s.size()) +
                                " ranks, the job " + std::to_string(config.size));
    }
    routing::tie_rule ties;
    if (!routing::parse_tie_rule(c.ties, &ties)) {
        return invalid_argument("LOOM_ROUTE_TIES=" + c.ties + " (toward-plus or source-parity)");
    }
    endpoint_config inner_cfg = config;
    inner_cfg.peers           = s.neighbours(config.rank);
    if (inner_cfg.peers.empty()) {
        inner_cfg.peers.push_back(config.rank);  // empty means "all": name ourselves instead
    }
    LOOM_ASSIGN(auto inner, drivers::open(inner_name, inner_cfg));
    return std::unique_ptr<endpoint>(
        new forward_endpoint(std::move(inner), c, s, ties, config.rank));
}

}  // namespace forward

std::vector<link_stat> link_stats(const endpoint& ep) {
    const auto* f = dynamic_cast<const forward::forward_endpoint*>(&ep);
    return f != nullptr ? f->stats() : std::vector<link_stat>{};
}

}  // namespace loom::drivers
