// SPDX-License-Identifier: Apache-2.0
// The reliable endpoint's control part and posting (reliable_endpoint.hh): open (every pool
// sized here), connect (hello and hello-ack with every peer, exchanging incarnations and first
// sequence numbers), post, cancel, the poll pass, peer failure and close.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/byte_order.hh"
#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "base/secret.hh"
#include "drivers/reliable/reliable_endpoint.hh"
#include "drivers/reliable/reliable_params.hh"

namespace loom::drivers::reliable {
namespace {

constexpr double hello_interval_s = 0.02;
// How long connect() goes on answering hellos after its own were answered (connect()).
constexpr double answer_linger_s    = 3 * hello_interval_s;
constexpr double link_check_s       = 0.01;  // alive() is asked this often, not every pass
constexpr double goodbye_interval_s = 0.01;  // close() repeats its unanswered goodbyes
constexpr double wheel_tick_s       = 250e-6;
constexpr size_t wheel_buckets      = 1024;

uint32_t random32() {
    uint8_t b[4] = {};
    if (!random_bytes(b, sizeof b).is_ok()) {
        return uint32_t(now_s() * 1e9) ^ uint32_t(::getpid());
    }
    return be::get32(b);
}

}  // namespace

rel_endpoint::rel_endpoint(const endpoint_config& config,
                           std::vector<std::unique_ptr<common::frame_link>> links,
                           std::vector<int> link_of_peer, const options& opts)
    : rank_(config.rank),
      size_(config.size),
      config_(config),
      opts_(opts),
      links_(std::move(links)),
      link_of_peer_(std::move(link_of_peer)),
      self_(config.rank, common::loopback_max_ops()) {}

std::string rel_endpoint::who(const peer& p) const {
    return opts_.name + ": rank " + std::to_string(rank_) + ", peer " + std::to_string(p.rank);
}

status rel_endpoint::init() {
    std::string me = opts_.name + ": rank " + std::to_string(rank_) + ": ";
    if (int(link_of_peer_.size()) != size_) {
        return invalid_argument(me + "link_of_peer has " + std::to_string(link_of_peer_.size()) +
                                " entries for " + std::to_string(size_) + " ranks");
    }
    if (opts_.eager_limit == 0 || opts_.window == 0 || opts_.max_ops == 0) {
        return invalid_argument(me + "window, eager limit and operations must be positive");
    }
    size_t mtu = SIZE_MAX;
    for (const auto& l : links_) {
        if (l == nullptr) {
            return invalid_argument(me + "a null link");
        }
        mtu = std::min(mtu, l->mtu());
    }
    if (!links_.empty() && mtu <= header_bytes + 64) {
        return invalid_argument(me + "a link MTU of at most " + std::to_string(header_bytes + 64) +
                                " bytes");
    }
    // No link at all: a job of one rank, where only the loopback serves.
    payload_ = links_.empty() ? 1 : std::min<size_t>(mtu - header_bytes, 65535);
    match_.open(opts_.max_ops);
    early_.init(opts_.early_buffers + opts_.max_ops);  // rts records need no buffer
    buffers_.init(opts_.early_buffers);
    buffer_bytes_.assign(opts_.early_buffers * opts_.eager_limit, 0);
    for (size_t i = 0; i < opts_.early_buffers; ++i) {
        buffers_[i].bytes = buffer_bytes_.data() + i * opts_.eager_limit;
    }
    inc_                    = random32() | 1;  // never 0: a hello's "unknown"
    peers_                  = std::vector<peer>(size_t(size_));
    std::vector<int> wanted = config_.peers;
    if (wanted.empty()) {
        for (int r = 0; r < size_; ++r) {
            wanted.push_back(r);
        }
    }
    for (int r : wanted) {
        if (r < 0 || r >= size_) {
            return invalid_argument(me + "peer " + std::to_string(r) + " is not a rank of " +
                                    std::to_string(size_));
        }
        if (r == rank_) {
            continue;
        }
        int l = link_of_peer_[size_t(r)];
        if (l < 0 || size_t(l) >= links_.size()) {
            return invalid_argument(me + "peer " + std::to_string(r) + " has no link");
        }
        peer& p     = peers_[size_t(r)];
        p.rank      = r;
        p.link      = l;
        p.first_seq = random32();
        p.rto       = opts_.rto_s;
        p.tx.init(opts_.window, p.first_seq);
        p.rx.init(opts_.window, payload_ + header_bytes);
        p.ctsq.init(opts_.max_ops + opts_.early_buffers);
        peer_ranks_.push_back(r);
    }
    return status::ok();
}

caps rel_endpoint::capabilities() const {
    caps c;
    c.name               = opts_.name.c_str();
    c.single_copy        = true;  // rendezvous data lands from the frame in the receive
    c.eager_limit        = opts_.eager_limit;
    c.max_message        = size_t{1} << 40;
    c.detects_peer_death = true;
    c.carrier            = medium::network;
    c.forwards           = !opts_.direct.empty();
    c.direct             = opts_.direct.c_str();
    return c;
}

status rel_endpoint::connect() {
    if (connected_) {
        return status::ok();
    }
    LOOM_ASSIGN(key_, derive_job_key(config_, opts_));
    now_ = now_s();
    wheel_.init(wheel_buckets, wheel_tick_s, now_);
    deadline until(config_.timeout_s);
    // Once every peer has answered, keep answering for a few hello periods: a peer whose
    // hello was lost (a port that came up a moment after its peer's) resends it within a
    // period, and the answer must come even if this rank then stops polling for a while (a
    // rank may do other work between connect() and its first operation).
    double answered_at = -1;
    for (;;) {
        now_     = now_s();
        bool all = true;
        for (int r : peer_ranks_) {
            peer& p = peers_[size_t(r)];
            if (!p.connected && now_ - p.last_hello >= hello_interval_s) {
                send_hello(p, frame_kind::hello);
                p.last_hello = now_;
            }
            all = all && p.connected;
        }
        for (auto& l : links_) {
            l->flush();
        }
        if (all && answered_at < 0) {
            answered_at = now_;
        }
        if (all && now_ - answered_at >= answer_linger_s) {
            break;
        }
        for (size_t l = 0; l < links_.size(); ++l) {
            receive(int(l));
        }
        if (until.expired()) {
            std::string missing;
            for (int r : peer_ranks_) {
                const peer& p = peers_[size_t(r)];
                if (!p.connected) {
                    missing += (missing.empty() ? "" : ", ") + std::to_string(r) + " (over " +
                               links_[size_t(p.link)]->describe() + ")";
                }
            }
            return status(LOOM_ERR_TIMEOUT, opts_.name + ": rank " + std::to_string(rank_) +
                                                ": no answer to hello within " +
                                                std::to_string(config_.timeout_s) +
                                                " s from peers " + missing);
        }
        timespec ts{0, 100000};
        ::nanosleep(&ts, nullptr);
    }
    for (int r : peer_ranks_) {
        peers_[size_t(r)].last_heard = now_;
    }
    last_pass_s_ = now_;
    fast_        = fast_path_of(this);
    connected_   = true;
    return status::ok();
}

op* rel_endpoint::take_op(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                          uint64_t cookie) {
    op* o = match_.take(peer, tag, imm, buf, len, cookie);
    if (o != nullptr) {
        o->is_send = o->silent = o->rndv = o->cts_ok = false;
        o->at                                        = op_at::none;
        o->msg_id                                    = 0;
        o->sent                                      = 0;
        o->unacked                                   = 0;
        o->copy.reset();
    }
    return o;
}

loom_status_t rel_endpoint::post_send(int peer_rank, uint64_t tag, uint64_t imm, const void* buf,
                                      size_t len, uint64_t cookie) {
    if (peer_rank == rank_) {
        return self_.post_send(tag, imm, buf, len, cookie);
    }
    if (peer_rank < 0 || peer_rank >= size_ || peers_[size_t(peer_rank)].link < 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    bool control = (tag & control_tag_bit) != 0;
    if (!control && buf == nullptr && len > 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(peer_rank)];
    op* o   = take_op(peer_rank, tag, imm, control ? nullptr : buf, control ? 0 : len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    o->is_send = true;
    o->silent  = control;
    if (p.failed) {
        if (control) {
            match_.release(o);
        } else {
            match_.complete(o, LOOM_ERR_PEER_FAILURE, 0);
        }
        return LOOM_SUCCESS;
    }
    o->rndv   = !control && len > opts_.eager_limit;
    o->msg_id = p.next_msg_id++;
    o->at     = op_at::sendq;
    p.sendq.push_back(o);
    now_ = now_s();
    pump(p);
    links_[size_t(p.link)]->flush();
    return LOOM_SUCCESS;
}

loom_status_t rel_endpoint::post_recv(int peer_rank, uint64_t tag, uint64_t imm, void* buf,
                                      size_t len, uint64_t cookie) {
    if (peer_rank == rank_) {
        return self_.post_recv(tag, imm, buf, len, cookie);
    }
    if (peer_rank < 0 || peer_rank >= size_ || peers_[size_t(peer_rank)].link < 0 ||
        (buf == nullptr && len > 0) || (tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    peer& p = peers_[size_t(peer_rank)];
    if (p.ctsq.size() >= p.ctsq.capacity()) {
        return LOOM_ERR_NO_RESOURCE;
    }
    op* o = take_op(peer_rank, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    if (early_msg* e = p.match.take_early(tag)) {
        bool rts = e->rts;
        if (rts && p.failed) {
            free_early(e);  // its data can no longer come
            match_.complete(o, LOOM_ERR_PEER_FAILURE, 0);
            return LOOM_SUCCESS;
        }
        deliver_early(p, e, o);
        if (rts) {
            now_ = now_s();
            pump(p);  // the cts goes now
            links_[size_t(p.link)]->flush();
        }
    } else if (p.failed) {
        match_.complete(o, LOOM_ERR_PEER_FAILURE, 0);
    } else if (const early_msg* c = p.match.early_contradicting(tag, imm)) {
        match_.complete_mismatch(o, c->imm);
    } else {
        o->at = op_at::posted;
        p.match.posted.push_back(o);
    }
    return LOOM_SUCCESS;
}

void rel_endpoint::finish_send(peer& p, op* o) {
    p.inflight.remove(o);
    o->at = op_at::none;
    if (o->silent || o->cancelled) {
        o->copy.reset();
        match_.release(o);
    } else {
        match_.complete(o, LOOM_SUCCESS, o->len);
    }
}

bool rel_endpoint::cancel(uint64_t cookie) {
    if (self_.cancel(cookie)) {
        return true;
    }
    op* o = match_.find_pending(cookie);
    if (o == nullptr || o->peer < 0 || o->peer >= size_) {
        return false;
    }
    peer& p = peers_[size_t(o->peer)];
    switch (o->at) {
        case op_at::posted:
            p.match.posted.remove(o);
            o->at = op_at::none;
            match_.release(o);
            return true;
        case op_at::sendq:
            if (o->sent == 0 && !o->cts_ok) {
                p.sendq.remove(o);  // the receiver has seen nothing of it
                o->at = op_at::none;
                match_.release(o);
                return true;
            }
            break;
        case op_at::rndv_wait:
        case op_at::filling:
            o->cancelled = true;  // its bytes go nowhere; released when the message ends
            return true;
        default:
            break;
    }
    // A send the receiver may be reading: finished from a copy of its bytes (driver.hh),
    // without a completion. Cancel is the failure path: it may allocate.
    if (o->is_send && o->len > 0) {
        o->copy.reset(new uint8_t[o->len]);
        std::memcpy(o->copy.get(), o->buf, o->len);
        o->buf = reinterpret_cast<char*>(o->copy.get());
    }
    o->cancelled = true;
    return true;
}

void rel_endpoint::fail_peer(peer& p, const std::string& why) {
    if (p.failed) {
        return;
    }
    p.failed      = true;
    size_t sends  = p.sendq.size() + p.wait_cts.size() + p.inflight.size();
    size_t recvs  = p.match.posted.size() + p.rndv_wait.size() + (p.in.recv != nullptr ? 1 : 0);
    size_t frames = p.tx.in_flight();
    if (sends + recvs + frames == 0) {
        LOOM_LOG_DEBUG(log::subsystem::net, "%s: %s; nothing was outstanding toward it",
                       who(p).c_str(), why.c_str());
    } else if (!closed_) {
        LOOM_LOG_ERROR(log::subsystem::net,
                       "%s: failed: %s; outstanding toward it: %zu sends, %zu receives, %zu "
                       "unacknowledged frames (over %s)",
                       who(p).c_str(), why.c_str(), sends, recvs, frames,
                       links_[size_t(p.link)]->describe().c_str());
    }
    auto fail_list = [&](intrusive_list<op>& list) {
        while (op* o = list.pop_front()) {
            o->at = op_at::none;
            if (o->silent) {
                match_.release(o);
            } else {
                match_.complete(o, LOOM_ERR_PEER_FAILURE, 0);  // dropped if cancelled
            }
        }
    };
    fail_list(p.sendq);
    fail_list(p.wait_cts);
    fail_list(p.inflight);
    fail_list(p.rndv_wait);
    fail_list(p.match.posted);
    if (op* r = p.in.recv; r != nullptr) {
        r->at = op_at::none;
        match_.complete(r, LOOM_ERR_PEER_FAILURE, 0);
    }
    if (p.in.early != nullptr) {
        free_early(p.in.early);
    }
    p.in = inbound{};
    // Eager messages that arrived whole were sent and acknowledged: a receive posted later
    // still gets them. Rendezvous requests go: their data can no longer come.
    for (early_msg* e = p.match.early.front(); e != nullptr;) {
        early_msg* next = e->next;
        if (e->rts) {
            p.match.early.remove(e);
            free_early(e);
        }
        e = next;
    }
    for (uint32_t s = p.tx.base(); s != p.tx.next(); ++s) {
        if (tx_slot* slot = p.tx.at(s)) {
            wheel_.disarm(slot);
            slot->owner = nullptr;
        }
    }
    while (!p.ctsq.empty()) {
        p.ctsq.pop();
    }
}

void rel_endpoint::check_peers() {
    bool links = now_ >= next_link_check_;
    if (links) {
        next_link_check_ = now_ + link_check_s;
    }
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (p.failed) {
            continue;
        }
        if (links && !links_[size_t(p.link)]->alive()) {
            fail_peer(p, "its link " + links_[size_t(p.link)]->describe() + " is down");
            continue;
        }
        bool busy = !p.tx.empty() || !p.sendq.empty() || !p.wait_cts.empty() ||
                    !p.inflight.empty() || !p.match.posted.empty() || !p.rndv_wait.empty() ||
                    p.in.active;
        if (!busy) {
            p.last_heard = now_;  // silence counts only while something waits on it
            continue;
        }
        double quiet = now_ - p.last_heard;
        if (!p.tx.empty() && now_ - p.last_progress > opts_.peer_timeout_s) {
            fail_peer(p, "no acknowledgement progress for " +
                             std::to_string(now_ - p.last_progress) + " s (timeout " +
                             std::to_string(opts_.peer_timeout_s) + " s)");
        } else if (quiet > opts_.peer_timeout_s) {
            fail_peer(p, "no frame from it for " + std::to_string(quiet) + " s (timeout " +
                             std::to_string(opts_.peer_timeout_s) + " s)");
        } else if (quiet > opts_.peer_timeout_s / 4 &&
                   now_ - p.last_ping > opts_.peer_timeout_s / 8) {
            send_ack(p, flag_ping);  // an idle but live peer answers
            p.last_ping = now_;
        }
    }
}

// Silence is evidence against a peer only while this endpoint was there to hear it. A caller
// that computed between calls, or a process the scheduler kept off its core, comes back to
// frames still waiting in its receive rings and to peers that had no reason to ping it: that
// gap is its own absence, not the peers' silence, so their clocks move past it. Gaps shorter
// than an eighth of the timeout count as usual, so a dead peer is still found within the
// timeout by an endpoint that keeps polling.
void rel_endpoint::excuse_own_absence() {
    double gap   = now_ - last_pass_s_;
    last_pass_s_ = now_;
    if (gap <= opts_.peer_timeout_s / 8) {
        return;
    }
    for (int r : peer_ranks_) {
        peer& p         = peers_[size_t(r)];
        p.last_heard    = std::min(now_, p.last_heard + gap);
        p.last_progress = std::min(now_, p.last_progress + gap);
    }
}

void rel_endpoint::progress() {
    now_ = now_s();
    excuse_own_absence();
    for (size_t l = 0; l < links_.size(); ++l) {
        receive(int(l));
    }
    for (int r : peer_ranks_) {
        drain(peers_[size_t(r)]);  // a stream paused for an early buffer goes on
    }
    wheel_.advance(now_, [&](timer_node* n) {
        auto* s = static_cast<tx_slot*>(n);
        if (s->sacked || !s->used) {
            return;
        }
        peer& p = peers_[size_t(s->peer)];
        if (s->seq - p.tx.base() > sack_bits) {
            // Beyond what a SACK can report while an older frame is missing: the receiver
            // may well hold it. Wait for the older one's recovery, which brings it into view.
            wheel_.arm(s, now_ + p.rto);
            return;
        }
        retransmit(s, /*fast=*/false);
    });
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        pump(p);
        if (p.ack_due) {
            send_ack(p, 0);
        }
    }
    for (auto& l : links_) {
        l->flush();
    }
    check_peers();
}

int rel_endpoint::poll(completion* out, int max) {
    int n = self_.poll(out, max);
    if (connected_ && !closed_) {
        progress();
    }
    return n + match_.harvest(out + n, max - n);
}

void rel_endpoint::close() {
    if (closed_) {
        return;
    }
    if (connected_) {
        // Linger, in two parts under one deadline. First our frames need the peers' acks.
        // Then the peers need ours: a goodbye carries them, and we keep saying it until each
        // peer answers (or fails, or says goodbye itself). Leaving earlier takes the link
        // down under a peer that may not have read our last acks yet; it would fail a send
        // that was in fact delivered.
        deadline until(opts_.linger_s);
        auto linger = [&](auto waits_on, bool say_goodbye) {
            double next_goodbye = 0;
            for (;;) {
                progress();
                if (say_goodbye && now_ >= next_goodbye) {
                    for (int r : peer_ranks_) {
                        if (!peers_[size_t(r)].farewell) {  // answered: said often enough
                            send_goodbye(peers_[size_t(r)]);
                        }
                    }
                    for (auto& l : links_) {
                        l->flush();
                    }
                    next_goodbye = now_ + goodbye_interval_s;
                }
                bool waiting = false;
                for (int r : peer_ranks_) {
                    const peer& p = peers_[size_t(r)];
                    waiting       = waiting || (!p.failed && waits_on(p));
                }
                if (!waiting || until.expired()) {
                    return;
                }
                timespec ts{0, 100000};
                ::nanosleep(&ts, nullptr);
            }
        };
        linger([](const peer& p) { return !p.tx.empty() || !p.sendq.empty(); }, false);
        linger([](const peer& p) { return p.known && !p.farewell; }, true);
    }
    closed_ = true;
    // What a slow run needs first: were frames lost and resent on a timer (LOOM_REL_RTO_US)?
    LOOM_LOG_INFO(log::subsystem::net,
                  "%s: rank %d closes: frames sent %llu received %llu, retransmits timer %llu "
                  "fast %llu probe %llu, duplicates %llu, link full %llu",
                  opts_.name.c_str(), rank_, static_cast<unsigned long long>(stats_.frames_sent),
                  static_cast<unsigned long long>(stats_.frames_received),
                  static_cast<unsigned long long>(stats_.retransmits),
                  static_cast<unsigned long long>(stats_.fast_retransmits),
                  static_cast<unsigned long long>(stats_.probes),
                  static_cast<unsigned long long>(stats_.duplicates),
                  static_cast<unsigned long long>(stats_.link_full));
    for (int r : peer_ranks_) {
        fail_peer(peers_[size_t(r)], "the endpoint closed");
    }
    self_.fail_all(LOOM_ERR_PEER_FAILURE);
}

result<options> options_from_params() {
    options o;
    auto positive = [](const loom::params::int_param& p, int64_t v) -> status {
        if (v <= 0) {
            return invalid_argument(std::string(p.name()) + " must be positive, not " +
                                    std::to_string(v));
        }
        return status::ok();
    };
    int64_t window = params::window.get(), eager = params::eager_limit.get();
    int64_t bufs = params::early_buffers.get(), ops = params::max_ops.get();
    int64_t rto = params::rto_us.get(), every = params::ack_every.get();
    LOOM_CHECK(positive(params::window, window));
    LOOM_CHECK(positive(params::eager_limit, eager));
    LOOM_CHECK(positive(params::early_buffers, bufs));
    LOOM_CHECK(positive(params::max_ops, ops));
    LOOM_CHECK(positive(params::rto_us, rto));
    LOOM_CHECK(positive(params::ack_every, every));
    if (window > 32768) {
        return invalid_argument("LOOM_REL_WINDOW must be at most 32768, not " +
                                std::to_string(window));
    }
    o.window         = size_t(window);
    o.eager_limit    = size_t(eager);
    o.early_buffers  = size_t(bufs);
    o.max_ops        = size_t(ops);
    o.rto_s          = double(rto) * 1e-6;
    o.ack_every      = uint32_t(every);
    o.peer_timeout_s = params::peer_timeout.get();
    o.linger_s       = params::linger.get();
    if (!(o.peer_timeout_s > 0)) {
        return invalid_argument("LOOM_REL_PEER_TIMEOUT must be positive");
    }
    return o;
}

result<std::unique_ptr<endpoint>> open_reliable(
    const endpoint_config& config, std::vector<std::unique_ptr<common::frame_link>> links,
    std::vector<int> link_of_peer, const options& opts) {
    auto ep =
        std::make_unique<rel_endpoint>(config, std::move(links), std::move(link_of_peer), opts);
    LOOM_CHECK(ep->init());
    return std::unique_ptr<endpoint>(std::move(ep));
}

const reliable_stats* stats_of(const endpoint& ep) {
    const auto* r = dynamic_cast<const rel_endpoint*>(&ep);
    return r != nullptr ? &r->stats() : nullptr;
}

}  // namespace loom::drivers::reliable
