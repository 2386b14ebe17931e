// SPDX-License-Identifier: Apache-2.0
// The aggregation node's data path: links, parsing, loss injection, the aggregator's sink
// (switch_node.hh). The control path (join, leave, statistics) is in switch_control.cc.
#include "inc/node/switch_node.hh"

#include <algorithm>

namespace loom::inc {

// Maps the aggregator's (job, comm, member) to the link that joined as that member.
class switch_node::sink final : public packet_sink {
  public:
    explicit sink(switch_node& n) : node_(n) {}
    void unicast(uint64_t job, uint64_t comm, uint32_t member, const uint8_t* packet,
                 size_t len) override {
        group_state* g = node_.find_group(job, comm);
        if (g != nullptr && member < g->members.size() && g->members[member] != nullptr) {
            node_.send(*g->members[member], packet, len);
        }
    }
    void multicast(uint64_t job, uint64_t comm, const uint8_t* packet, size_t len) override {
        group_state* g = node_.find_group(job, comm);
        if (g == nullptr) {
            return;
        }
        for (peer* p : g->members) {
            if (p != nullptr) {
                node_.send(*p, packet, len);
            }
        }
    }
    void upstream(uint64_t, uint64_t, const uint8_t* packet, size_t len) override {
        if (node_.parent_) {
            node_.send(*node_.parent_, packet, len);
        }
    }

  private:
    switch_node& node_;
};

namespace {

// tcp:127.x.x.x / tcp:localhost / tcp:[::1], shm: (a Unix socket) and ofi:shm reach this host
// only; other ofi: providers reach the network.
bool loopback_only(std::string_view listen) {
    if (listen.starts_with("ofi:")) {
        return listen.substr(4).starts_with("shm");
    }
    if (!listen.starts_with("tcp:")) {
        return true;
    }
    std::string_view host = listen.substr(4, listen.rfind(':') - 4);
    return host.starts_with("127.") || host == "localhost" || host == "[::1]" || host == "::1";
}

}  // namespace

void switch_node::add(drivers::datagram_stats& to, const drivers::datagram_stats& s) {
    to.sent += s.sent;
    to.received += s.received;
    to.send_dropped += s.send_dropped;
    to.bytes_sent += s.bytes_sent;
    to.bytes_received += s.bytes_received;
    to.bad_frames += s.bad_frames;
}

switch_node::switch_node(const switch_config& c)
    : cfg_(c),
      agg_(aggregator_config{.total_slots  = c.slots,
                             .job_quota    = c.job_quota,
                             .max_members  = c.max_members,
                             .memory_limit = c.memory_limit,
                             .job_memory   = c.job_memory}),
      sink_(std::make_unique<sink>(*this)),
      dice_(c.drop, c.dup, 0, c.seed) {
    ctrl_.resize(header_bytes + max_payload_bytes);
}

switch_node::~switch_node() = default;

result<std::unique_ptr<switch_node>> switch_node::open(const switch_config& c) {
    if (c.drop < 0 || c.dup < 0 || c.drop + c.dup > 1) {
        return invalid_argument("loom-switch: drop " + std::to_string(c.drop) + " and dup " +
                                std::to_string(c.dup) + " must be probabilities summing to <= 1");
    }
    if (c.key.empty() && !c.insecure) {
        return invalid_argument(
            "loom-switch: no node key: give --key-file FILE (joins must prove their job's "
            "ticket), or --insecure to admit any join (loopback and shm listeners only)");
    }
    if (c.key.empty() && !loopback_only(c.listen)) {
        return invalid_argument("loom-switch: --insecure on " + c.listen +
                                " would admit joins from other hosts: listen on loopback or "
                                "give --key-file");
    }
    if (c.max_links < 1 || c.max_members < 1 || !(c.idle_timeout_s > 0)) {
        return invalid_argument(
            "loom-switch: the link limit, the member limit and the idle timeout must be "
            "positive");
    }
    std::unique_ptr<switch_node> n(new switch_node(c));
    auto l = drivers::listen_datagram(c.listen);
    if (!l) {
        return l.error();
    }
    n->listener_ = std::move(*l);
    if (!c.parent.empty()) {
        auto up = drivers::connect_datagram(c.parent, c.connect_timeout_s);
        if (!up) {
            return status(up.error()).prefix("loom-switch: parent: ");
        }
        n->parent_ = std::make_unique<peer>(peer{.l = std::move(*up), .is_parent = true});
        if (!c.await_parent) {
            return n;  // the challenge comes through poll()
        }
        // Our joins upward sign the parent's nonce: it comes first on the link.
        if (!await_challenge(*n->parent_->l, c.connect_timeout_s, &n->parent_->nonce)) {
            return status(LOOM_ERR_TIMEOUT, "loom-switch: parent " + c.parent +
                                                " sent no challenge within " +
                                                std::to_string(c.connect_timeout_s) + " s");
        }
        n->parent_->has_nonce = true;
    }
    return n;
}

std::string switch_node::address() const {
    return listener_->address();
}

bool switch_node::poll() {
    size_t before = stats_.links_accepted + stats_.links_refused;
    // New links are looked for at most every accept_interval_s, not on every pass: a
    // listener's accept() costs a system call (tcp, shm: accept4; memif: its ids socket and
    // a link query per free port), and a pass runs between every few packets. Paid per pass,
    // it slowed loom-dpu --aggregate's forwarding about tenfold (docs/tools/loom-dpu.md).
    if (double now = now_s(); now >= next_accept_s_) {
        next_accept_s_ = now + accept_interval_s;
        accept_links();
    }
    bool work = stats_.links_accepted + stats_.links_refused != before;
    for (size_t i = 0; i < peers_.size(); ++i) {
        work |= drain(*peers_[i]);
    }
    if (parent_) {
        work |= drain(*parent_);
    }
    check_parent();
    // Idle links are looked for ten times a second, not on every pass.
    if (double now = now_s(); now >= next_idle_check_s_) {
        next_idle_check_s_ = now + 0.1;
        close_idle(now);
    }
    reap();
    return work;
}

// Every new link gets its nonce at once; at the limit, the oldest link that joined nothing
// makes room (a flood of idle connections cannot lock members out), else the new one is
// refused. Either way the descriptor is closed here, so a flood costs no descriptors.
void switch_node::accept_links() {
    while (auto l = listener_->accept()) {
        if (peers_.size() >= cfg_.max_links && !make_room()) {
            ++stats_.links_refused;
            continue;  // `l` closes
        }
        auto p = std::make_unique<peer>(peer{.l = std::move(l), .idle_since_s = now_s()});
        ++stats_.links_accepted;
        send_challenge(*p);
        peers_.push_back(std::move(p));
    }
}

bool switch_node::make_room() {
    size_t oldest = peers_.size();
    for (size_t i = 0; i < peers_.size(); ++i) {
        const peer& p = *peers_[i];
        if (p.memberships == 0 &&
            (oldest == peers_.size() || p.idle_since_s < peers_[oldest]->idle_since_s)) {
            oldest = i;
        }
    }
    if (oldest == peers_.size()) {
        return false;  // every link is a member's
    }
    add(retired_, peers_[oldest]->l->stats());
    ++stats_.links_evicted;
    ++stats_.links_closed;
    peers_.erase(peers_.begin() + long(oldest));
    return true;
}

void switch_node::close_idle(double now) {
    for (auto& p : peers_) {
        if (p->memberships == 0 && !p->closing && now - p->idle_since_s > cfg_.idle_timeout_s) {
            p->closing = true;
            ++stats_.links_idle_closed;
        }
    }
}

// Off the good path: only a refused packet reads the clock.
void switch_node::count_bad(peer& p) {
    if (p.is_parent) {
        return;  // the parent is not ours to close
    }
    double now = now_s();
    if (now - p.bad_window_s >= 1) {
        p.bad_window_s  = now;
        p.bad_in_window = 0;
    }
    if (++p.bad_in_window > cfg_.max_bad_per_s && !p.closing) {
        p.closing = true;
        ++stats_.links_bad_closed;
    }
}

// The membership check of every contribute and ack: the group exists and this link is
// the one that joined as the packet's contributor.
switch_node::group_state* switch_node::member_group(const peer& p, const header& h) {
    group_state* g = find_group(h.job, h.comm);
    return g != nullptr && h.contributor < g->members.size() && g->members[h.contributor] == &p
               ? g
               : nullptr;
}

// At most a bounded batch per link per pass, so one busy link cannot starve the others.
bool switch_node::drain(peer& p) {
    const uint8_t* packet = nullptr;
    size_t len            = 0;
    int n                 = 0;
    for (; n < 256 && !p.closing && p.l->recv(&packet, &len); ++n) {
        ++stats_.packets_in;
        stats_.bytes_in += len;
        handle(p, packet, len);
    }
    return n > 0;
}

void switch_node::handle(peer& p, const uint8_t* packet, size_t len) {
    header h;
    const uint8_t* body = nullptr;
    parse_error e       = parse(packet, len, &h, &body);
    if (e != parse_error::none) {
        ++stats_.malformed[std::min<size_t>(size_t(e), stats_.malformed.size() - 1)];
        count_bad(p);
        return;
    }
    bool data = h.kind == packet_kind::contribute || h.kind == packet_kind::ack ||
                h.kind == packet_kind::result;
    if (data) {
        stats_.retransmissions += (h.flags & flag_resend) != 0 ? 1 : 0;
        // Results belong to the parent's link, contributions and acks to the members'.
        if ((h.kind == packet_kind::result) != p.is_parent) {
            ++stats_.unexpected;
            count_bad(p);
            return;
        }
        // Only the link that joined as a member speaks for it: anything else would be
        // reduced into a job it does not belong to.
        group_state* g = p.is_parent ? nullptr : member_group(p, h);
        if (!p.is_parent && g == nullptr) {
            ++stats_.forged;
            count_bad(p);
            return;
        }
        if (g != nullptr && !g->broken.empty() && h.kind == packet_kind::contribute &&
            !agg_.answered(h)) {
            reply_nack(p, h, status(LOOM_ERR_PEER_FAILURE, g->broken));
            return;
        }
        int times = 1;
        if (cfg_.drop > 0 || cfg_.dup > 0) {
            bool drop = dice_.drop(), dup = dice_.duplicate();  // both drawn: one fault does not
            times = drop ? 0 : dup ? 2 : 1;                     // shift the pattern of the next
            stats_.drops_injected += times == 0 ? 1 : 0;
            stats_.dups_injected += times == 2 ? 1 : 0;
        }
        for (int i = 0; i < times; ++i) {
            agg_.on_packet(h, body, *sink_);
        }
        return;
    }
    switch (h.kind) {
        case packet_kind::join:
            p.is_parent ? void(++stats_.unexpected) : on_join(p, h, body);
            return;
        case packet_kind::challenge:  // the parent's, after a reconnect; ours never come back
            if (p.is_parent && read_challenge(h, body, &p.nonce)) {
                p.has_nonce = true;
                return;
            }
            ++stats_.unexpected;
            count_bad(p);
            return;
        case packet_kind::joined:
            p.is_parent ? on_parent_reply(h, body) : void(++stats_.unexpected);
            return;
        case packet_kind::nack:
            p.is_parent ? on_parent_reply(h, body) : on_child_nack(p, h, body);
            return;
        case packet_kind::leave:
            p.is_parent ? void(++stats_.unexpected) : on_leave(p, h);
            return;
        case packet_kind::stats_query:
            p.idle_since_s = now_s();
            reply_stats(p);
            return;
        default:
            ++stats_.unexpected;
            count_bad(p);
            return;
    }
}

// Links whose other side went away: their memberships end as if they had left.
void switch_node::reap() {
    for (size_t i = 0; i < peers_.size();) {
        peer* p = peers_[i].get();
        if (p->l->alive() && !p->closing) {
            ++i;
            continue;
        }
        for (size_t k = groups_.size(); k-- > 0;) {
            group_state& g = *groups_[k];
            for (uint32_t m = 0; m < g.members.size(); ++m) {
                if (g.members[m] != p) {
                    continue;
                }
                if (g.joined > 1) {  // others remain, and it did not leave
                    break_group(g,
                                "member " + std::to_string(m) + " (" + p->l->describe() +
                                    ") is gone: its link to the aggregation node " + address() +
                                    " closed without leaving",
                                p);
                }
                if (member_gone(g, m)) {
                    break;  // the group is gone with its last member
                }
            }
        }
        add(retired_, p->l->stats());
        ++stats_.links_closed;
        peers_.erase(peers_.begin() + long(i));
    }
}

void switch_node::send(peer& p, const uint8_t* packet, size_t len) {
    stats_.bytes_out += len;
    p.l->send(packet, len);
}

switch_node::group_state* switch_node::find_group(uint64_t job, uint64_t comm) {
    for (auto& g : groups_) {
        if (g->job == job && g->comm == comm) {
            return g.get();
        }
    }
    return nullptr;
}

}  // namespace loom::inc
