// SPDX-License-Identifier: Apache-2.0
// The aggregation node's control path: join (admission, the parent's join), leave, and
// statistics (switch_node.hh). Control packets may allocate; data packets never get here.
#include <algorithm>
#include <sstream>

#include "inc/node/switch_node.hh"

namespace loom::inc {

void switch_node::send_control(peer& p, packet_kind kind, uint64_t job, uint64_t comm,
                               uint32_t member, std::string_view body, uint32_t seq,
                               uint32_t slot) {
    body = body.substr(0, max_payload_bytes);
    send(p, ctrl_.data(), control_packet(kind, job, comm, member, body, ctrl_.data(), seq, slot));
}

void switch_node::reply_joined(peer& p, const group_state& g, uint32_t member) {
    send_control(p, packet_kind::joined, g.job, g.comm, member, {}, 0, g.req.slots);
}

void switch_node::reply_nack(peer& p, const header& h, const status& why) {
    ++stats_.nacks;
    send_control(p, packet_kind::nack, h.job, h.comm, h.contributor, why.message(),
                 uint32_t(why.code()));
}

void switch_node::send_challenge(peer& p) {
    if (!random_bytes(p.nonce.data(), p.nonce.size())) {
        p.closing = true;  // no randomness, no proof: the link cannot join
        return;
    }
    send_control(p, packet_kind::challenge, 0, 0, 0,
                 std::string_view(reinterpret_cast<const char*>(p.nonce.data()), p.nonce.size()));
}

// A join proves its job's ticket (ticket.hh) over this link's nonce; without a key
// (--insecure) every well-formed join passes.
status switch_node::check_proof(const peer& p, const header& h, const join_request& r,
                                const uint8_t* mac) const {
    if (cfg_.key.empty()) {
        return status::ok();
    }
    std::string who = "loom-switch: join of job " + std::to_string(h.job) + " member " +
                      std::to_string(h.contributor);
    if (mac == nullptr) {
        return status(LOOM_ERR_INVALID_ARGUMENT,
                      who + " carries no proof of its job's ticket (set LOOM_INC_TICKET)");
    }
    auto key       = std::span(reinterpret_cast<const uint8_t*>(cfg_.key.data()), cfg_.key.size());
    digest256 want = join_mac(job_ticket(key, h.job), p.nonce, h.job, h.comm, h.contributor, r);
    if (!equal_constant_time(want, std::span<const uint8_t>(mac, mac_bytes))) {
        return status(LOOM_ERR_INVALID_ARGUMENT,
                      who +
                          ": wrong ticket (another node's key or another job's ticket) or a "
                          "replayed join");
    }
    return status::ok();
}

// Our own join at the parent, signed like a member's with the job's ticket under the key
// the tree's nodes share.
status switch_node::send_parent_join(const header& h, const join_request& up, uint32_t member) {
    if (!parent_->has_nonce) {
        return status(LOOM_ERR_PEER_FAILURE,
                      "loom-switch: the parent " + parent_->l->describe() + " sent no challenge");
    }
    std::string ticket;
    if (!cfg_.key.empty()) {
        auto key    = std::span(reinterpret_cast<const uint8_t*>(cfg_.key.data()), cfg_.key.size());
        digest256 t = job_ticket(key, h.job);
        ticket.assign(reinterpret_cast<const char*>(t.data()), t.size());
    }
    size_t len = join_packet(h.job, h.comm, member, up, parent_->nonce, ticket, ctrl_.data());
    send(*parent_, ctrl_.data(), len);
    return status::ok();
}

// Admits (job, comm) at the aggregator and, for a tree, asks the parent.
status switch_node::admit_group(const header& h, const join_request& r, group_state** out) {
    bool tree = r.parent_members > 0;
    if (tree && !parent_) {
        return not_supported("loom-switch: the join asks for a parent level (" +
                             std::to_string(r.parent_members) +
                             " members) but this node has no --parent");
    }
    if (tree && !parent_->l->alive()) {
        return status(LOOM_ERR_PEER_FAILURE,
                      "loom-switch: the parent " + parent_->l->describe() + " is gone");
    }
    if (tree && r.parent_members > cfg_.max_members) {
        return status(LOOM_ERR_NO_RESOURCE, "loom-switch: " + std::to_string(r.parent_members) +
                                                " parent members exceed the member limit " +
                                                std::to_string(cfg_.max_members) +
                                                " (--max-members)");
    }
    if (tree && r.parent_index >= r.parent_members) {
        return invalid_argument("loom-switch: parent index " + std::to_string(r.parent_index) +
                                " outside the parent's " + std::to_string(r.parent_members) +
                                " members");
    }
    group_config c{.job               = h.job,
                   .comm              = h.comm,
                   .members           = r.members,
                   .expected          = r.expected,
                   .slots             = r.slots,
                   .deterministic     = (r.flags & join_deterministic) != 0,
                   .upstream          = tree,
                   .up_index          = r.parent_index,
                   .members_are_nodes = (r.flags & join_from_node) != 0};
    if (status st = agg_.admit(c); !st) {
        return st;
    }
    auto g  = std::make_unique<group_state>();
    g->job  = h.job;
    g->comm = h.comm;
    g->req  = r;
    g->members.assign(r.members, nullptr);
    g->up = tree ? up_state::pending : up_state::none;
    if (tree) {
        join_request up;
        up.members = up.expected = r.parent_members;
        up.slots                 = r.slots;
        up.flags                 = (r.flags & join_deterministic) | join_from_node;
        if (status st = send_parent_join(h, up, r.parent_index); !st) {
            agg_.release(h.job, h.comm);
            return st;
        }
    }
    groups_.push_back(std::move(g));
    *out = groups_.back().get();
    return status::ok();
}

void switch_node::on_join(peer& p, const header& h, const uint8_t* body) {
    ++stats_.joins;
    join_request r;
    const uint8_t* mac = nullptr;
    if (!decode_join(body, h.count, &r, &mac)) {
        count_bad(p);
        reply_nack(p, h,
                   invalid_argument("loom-switch: a join payload is " +
                                    std::to_string(join_request_bytes) + " or " +
                                    std::to_string(signed_join_bytes) + " bytes, not " +
                                    std::to_string(h.count)));
        return;
    }
    if (status st = check_proof(p, h, r, mac); !st) {
        ++stats_.join_auth_refused;
        count_bad(p);
        reply_nack(p, h, st);
        return;
    }
    if (h.contributor >= r.members) {
        reply_nack(p, h,
                   invalid_argument("loom-switch: member " + std::to_string(h.contributor) +
                                    " outside 0.." + std::to_string(r.members - 1)));
        return;
    }
    group_state* g = find_group(h.job, h.comm);
    if (g == nullptr) {
        if (status st = admit_group(h, r, &g); !st) {
            stats_.join_limit_refused += st.code() == LOOM_ERR_NO_RESOURCE ? 1 : 0;
            reply_nack(p, h, st);
            return;
        }
    } else if (g->req.members != r.members || g->req.expected != r.expected ||
               g->req.slots != r.slots || g->req.flags != r.flags) {
        reply_nack(p, h,
                   invalid_argument("loom-switch: join of member " + std::to_string(h.contributor) +
                                    " disagrees with the group's members, expected, "
                                    "slots or flags"));
        return;
    }
    peer*& slot = g->members[h.contributor];
    if (slot != nullptr && slot != &p) {
        reply_nack(p, h,
                   invalid_argument("loom-switch: member " + std::to_string(h.contributor) +
                                    " already joined on another link"));
        return;
    }
    if (slot == nullptr) {
        slot = &p;
        ++g->joined;
        ++p.memberships;
    }
    if (g->up == up_state::pending) {
        g->pending.emplace_back(&p, h.contributor);
        return;
    }
    reply_joined(p, *g, h.contributor);
}

void switch_node::on_parent_reply(const header& h, const uint8_t* body) {
    group_state* g = find_group(h.job, h.comm);
    if (g != nullptr && g->up == up_state::joined && h.kind == packet_kind::nack) {
        // The group broke above this node (a member elsewhere in the tree is gone).
        break_group(*g, std::string(reinterpret_cast<const char*>(body), h.count));
        return;
    }
    if (g == nullptr || g->up != up_state::pending) {
        ++stats_.unexpected;
        return;
    }
    auto pending = std::move(g->pending);
    g->pending.clear();
    if (h.kind == packet_kind::joined) {
        g->up = up_state::joined;
        for (auto [p, m] : pending) {
            reply_joined(*p, *g, m);
        }
        return;
    }
    // Refused upstream: refuse the members with the parent's reason, and forget the group.
    auto code = loom_status_t(h.seq);
    status why(code == LOOM_SUCCESS ? LOOM_ERR_INTERNAL : code,
               "loom-switch: the parent refused: " +
                   std::string(reinterpret_cast<const char*>(body), h.count));
    g->up = up_state::none;  // nothing to leave upstream
    for (auto [p, m] : pending) {
        header as      = h;
        as.contributor = m;
        reply_nack(*p, as, why);
    }
    drop_group(*g);
}

// A child node's nack: the group broke below it (one of its members is gone).
void switch_node::on_child_nack(peer& p, const header& h, const uint8_t* body) {
    group_state* g = member_group(p, h);
    if (g == nullptr) {
        ++stats_.unexpected;
        count_bad(p);
        return;
    }
    break_group(*g, std::string(reinterpret_cast<const char*>(body), h.count), &p);
}

// Nacks every member but `gone` and tells the parent, once per group. The parent hears it
// as a child's nack and breaks the group down its other children; the reason travels whole.
void switch_node::break_group(group_state& g, const std::string& why, const peer* gone) {
    if (!g.broken.empty()) {
        return;
    }
    g.broken = why;
    ++stats_.groups_broken;
    status st(LOOM_ERR_PEER_FAILURE, why);
    header h;
    h.job  = g.job;
    h.comm = g.comm;
    for (uint32_t m = 0; m < g.members.size(); ++m) {
        if (peer* p = g.members[m]; p != nullptr && p != gone) {
            h.contributor = m;
            reply_nack(*p, h, st);
        }
    }
    if (g.up != up_state::none && parent_ && !parent_gone_ && parent_.get() != gone) {
        send_control(*parent_, packet_kind::nack, g.job, g.comm, g.req.parent_index, why,
                     uint32_t(LOOM_ERR_PEER_FAILURE));
    }
}

// A parent link that died breaks every group that went through it (once).
void switch_node::check_parent() {
    if (!parent_ || parent_gone_ || parent_->l->alive()) {
        return;
    }
    parent_gone_ = true;
    std::string why =
        "the parent aggregation node (" + parent_->l->describe() + ") of " + address() + " is gone";
    for (auto& g : groups_) {
        if (g->up != up_state::none) {
            break_group(*g, why);
        }
    }
}

void switch_node::on_leave(peer& p, const header& h) {
    ++stats_.leaves;
    group_state* g = find_group(h.job, h.comm);
    if (g != nullptr && h.contributor < g->members.size() && g->members[h.contributor] == &p) {
        member_gone(*g, h.contributor);
    }
}

bool switch_node::member_gone(group_state& g, uint32_t member) {
    if (peer* p = g.members[member]; p != nullptr && --p->memberships == 0) {
        p->idle_since_s = now_s();  // a link of no group again: the idle clock restarts
    }
    g.members[member] = nullptr;
    --g.joined;
    std::erase_if(g.pending, [&](const auto& pm) { return pm.second == member; });
    if (g.joined > 0) {
        return false;
    }
    drop_group(g);
    return true;
}

void switch_node::drop_group(group_state& g) {
    for (peer* p : g.members) {  // members still joined (a group the parent refused)
        if (p != nullptr && --p->memberships == 0) {
            p->idle_since_s = now_s();
        }
    }
    agg_.release(g.job, g.comm);
    if (g.up != up_state::none && parent_) {
        send_control(*parent_, packet_kind::leave, g.job, g.comm, g.req.parent_index, {});
    }
    std::erase_if(groups_, [&](const auto& p) { return p.get() == &g; });
}

std::string switch_node::stats_text() const {
    drivers::datagram_stats links = retired_;
    for (const auto& p : peers_) {
        add(links, p->l->stats());
    }
    if (parent_) {
        add(links, parent_->l->stats());
    }
    const aggregator_stats& a = agg_.stats();
    std::ostringstream o;
    auto line = [&](std::string_view name, uint64_t v) { o << name << ' ' << v << '\n'; };
    line("links", peers_.size());
    line("links_accepted", stats_.links_accepted);
    line("links_closed", stats_.links_closed);
    line("parent_alive", parent_ && parent_->l->alive() ? 1 : 0);
    line("groups", groups_.size());
    line("slots_in_use", agg_.slots_in_use());
    line("packets_in", stats_.packets_in);
    line("bytes_in", stats_.bytes_in);
    line("bytes_out", stats_.bytes_out);
    line("contributions", a.contributions);
    // Averages since the node started (--stats-interval prints them as it runs).
    double up_s = std::max(now_s() - started_s_, 1e-9);
    line("uptime_ms", uint64_t(up_s * 1e3));
    line("contributions_per_s", uint64_t(double(a.contributions) / up_s));
    line("bytes_in_per_s", uint64_t(double(stats_.bytes_in) / up_s));
    line("results", a.results);
    line("duplicates", a.duplicates);
    line("resent", a.resent);
    line("acks", a.acks);
    line("forwarded", a.forwarded);
    line("reforwarded", a.reforwarded);
    line("from_parent", a.from_parent);
    line("awaiting_parent", a.awaiting_parent);
    line("drops_injected", stats_.drops_injected);
    line("dups_injected", stats_.dups_injected);
    line("send_drops", links.send_dropped);
    line("bad_frames", links.bad_frames);
    line("retransmissions", stats_.retransmissions);
    // One word each (parse_error_name's are phrases), in parse_error's order.
    static const char* const reasons[] = {"truncated", "bad_magic",  "bad_version",
                                          "bad_kind",  "bad_dtype",  "bad_op",
                                          "too_large", "bad_length", "bad_checksum"};
    for (size_t e = 1; e < stats_.malformed.size(); ++e) {
        o << "malformed_" << reasons[e - 1] << ' ' << stats_.malformed[e] << '\n';
    }
    line("unknown_group", a.unknown_group);
    line("bad_member", a.bad_member);
    line("bad_slot", a.bad_slot);
    line("stale", a.stale);
    line("mismatched", a.mismatched);
    line("unexpected", stats_.unexpected);
    line("forged", stats_.forged);
    line("join_auth_refused", stats_.join_auth_refused);
    line("join_limit_refused", stats_.join_limit_refused);
    line("links_refused", stats_.links_refused);
    line("links_evicted", stats_.links_evicted);
    line("links_idle_closed", stats_.links_idle_closed);
    line("links_bad_closed", stats_.links_bad_closed);
    line("memory_in_use", agg_.bytes_in_use());
    line("joins", stats_.joins);
    line("nacks", stats_.nacks);
    line("groups_broken", stats_.groups_broken);
    line("leaves", stats_.leaves);
    line("stats_queries", stats_.stats_queries);
    return o.str();
}

void switch_node::reply_stats(peer& p) {
    ++stats_.stats_queries;
    send_control(p, packet_kind::stats_reply, 0, 0, 0, stats_text());
}

}  // namespace loom::inc
