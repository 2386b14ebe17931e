// SPDX-License-Identifier: Apache-2.0
// The aggregation node over packet links (loom-switch): the aggregator's slot logic behind a
// listener, with admission by join packets and, in a tree, a link to the parent node.
//
// One poll() pass accepts new links, drains every link (and the parent's), parses each
// packet (refusals counted per parse_error) and dispatches it: contribute / ack / a parent's
// result to the aggregator; join / leave / stats_query to the control path. The first join
// of (job, comm) admits the group; when it names a parent level (parent_members > 0) the
// node joins its parent first, as a child node, and answers its members once the parent
// has. When the last member left (leave packet, or its link died) the group's slots are
// released and the node leaves its parent too.
//
// A broken group. A member whose link dies without leaving (a rank or a child node crashed)
// takes the group's future with it: no entry it has not contributed to can complete. The
// node then breaks the group: it nacks every member still linked, naming the one gone, and
// tells its parent (a nack upward), which breaks the group across the tree, down every other
// child; a parent link that dies breaks every group that went through it. From then on a
// contribution to an entry without its result is answered with the nack (a member that
// missed the first one learns it at its next packet), while a retransmission to an entry
// already answered still gets its result, so a collective that had completed does not fail.
// Members see the failure at once, naming the member, instead of at their deadline.
//
// Loss injection (drop, dup) applies to data packets in the receive path, so tests see the
// recovery of a lossy fabric through a real process; control packets are never dropped. It
// draws through the fault injector's dice (drivers/fault_dice.hh): a packet is dropped with
// probability `drop`, else handled twice with probability `dup`.
//
// Never blocks; the data path makes no allocation (control packets may). Not thread-safe:
// one loop owns the node.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "base/status.hh"
#include "drivers/datagram.hh"
#include "drivers/fault_dice.hh"
#include "inc/aggregator/aggregator.hh"
#include "inc/node/join.hh"

namespace loom::inc {

struct switch_config {
    std::string listen;  // tcp:HOST:PORT (port 0: any) or shm:NAME
    std::string parent;  // empty: no parent (a root or a lone node)
    uint32_t slots     = 1024;
    uint32_t job_quota = 512;
    double drop = 0, dup = 0;  // probabilities per received data packet
    uint64_t seed            = 1;
    double connect_timeout_s = 5;  // to the parent
    // open() waits for the parent's challenge; false: it comes through poll() (a parent
    // served by the same poll loop, as in loom-dpu) and parent_ready() says when it came.
    bool await_parent = true;
    // Who may join (ticket.hh): the node key's raw bytes; empty only with `insecure`, where
    // every well-formed join is admitted (loopback and shm listeners only).
    std::string key;
    bool insecure = false;
    // Limits, checked before anything is allocated (a join over one is nacked, naming it).
    uint32_t max_members   = 1024;                 // members of one group
    uint64_t memory_limit  = uint64_t(256) << 20;  // aggregation memory of the node
    uint64_t job_memory    = uint64_t(64) << 20;   // of one job over its groups
    uint32_t max_links     = 256;                  // links held; the oldest unjoined one yields
    double idle_timeout_s  = 10;   // a link that belongs to no group is closed after this
    uint32_t max_bad_per_s = 100;  // malformed, forged or unexpected packets a link may send
};

/// The node's own counters; the aggregator's are beside them in stats_text().
struct switch_stats {
    uint64_t links_accepted = 0, links_closed = 0;
    uint64_t packets_in = 0, bytes_in = 0, bytes_out = 0;
    uint64_t drops_injected = 0, dups_injected = 0;
    uint64_t retransmissions = 0;  // data packets flagged flag_resend
    uint64_t joins = 0, nacks = 0, leaves = 0, stats_queries = 0;
    uint64_t groups_broken = 0;            // a member gone without leaving, or the parent gone
    uint64_t unexpected    = 0;            // a kind that has no business on that link
    std::array<uint64_t, 10> malformed{};  // by parse_error
    // Refusals (the node's defences): data packets not from the link that joined as their
    // member, joins without a valid proof, joins over a limit, links refused at the link
    // limit, evicted for a newer one, closed idle, closed for too many bad packets.
    uint64_t forged = 0, join_auth_refused = 0, join_limit_refused = 0;
    uint64_t links_refused = 0, links_evicted = 0, links_idle_closed = 0, links_bad_closed = 0;
};

class switch_node {
  public:
    /// Listens, and connects to the parent if there is one.
    static result<std::unique_ptr<switch_node>> open(const switch_config& c);
    ~switch_node();
    switch_node(const switch_node&)            = delete;
    switch_node& operator=(const switch_node&) = delete;

    /// The address clients connect to (tcp port 0 resolved).
    std::string address() const;
    /// One pass over the links; true if anything arrived (the caller backs off when idle).
    bool poll();
    /// Every counter, "name value" a line.
    std::string stats_text() const;
    const switch_stats& stats() const { return stats_; }
    const aggregator_stats& aggregation() const { return agg_.stats(); }
    /// True when there is no parent, or its challenge came (joins can go up).
    bool parent_ready() const { return !parent_ || parent_->has_nonce; }
    uint32_t slots_in_use() const { return agg_.slots_in_use(); }

  private:
    struct peer {
        std::unique_ptr<drivers::datagram_endpoint> l;
        bool is_parent = false;
        bool closing   = false;  // to be closed by the next reap()
        join_nonce nonce{};      // a member link: what its joins sign; the parent: its challenge
        bool has_nonce         = false;  // the parent's challenge arrived
        uint32_t memberships   = 0;      // groups this link joined (held or pending)
        double idle_since_s    = 0;      // accepted, or its last membership or stats query
        double bad_window_s    = 0;      // start of the current second of bad packets
        uint32_t bad_in_window = 0;
    };
    enum class up_state { none, pending, joined };
    struct group_state {
        uint64_t job = 0, comm = 0;
        join_request req;
        std::vector<peer*> members;  // by member id; null: not joined
        uint32_t joined = 0;
        up_state up     = up_state::none;
        std::vector<std::pair<peer*, uint32_t>> pending;  // joins held until the parent answers
        std::string broken;  // why the group can complete nothing new; empty: whole
    };
    class sink;

    explicit switch_node(const switch_config& c);
    void accept_links();
    bool make_room();  // at the link limit: evicts the oldest link of no group
    void close_idle(double now);
    void count_bad(peer& p);                                    // closes a link over max_bad_per_s
    group_state* member_group(const peer& p, const header& h);  // null: not p's member's
    void break_group(group_state& g, const std::string& why, const peer* gone = nullptr);
    void check_parent();
    bool drain(peer& p);
    void handle(peer& p, const uint8_t* packet, size_t len);
    void reap();
    static void add(drivers::datagram_stats& to, const drivers::datagram_stats& s);
    void send(peer& p, const uint8_t* packet, size_t len);
    group_state* find_group(uint64_t job, uint64_t comm);

    // Control path (switch_control.cc).
    void on_join(peer& p, const header& h, const uint8_t* body);
    status check_proof(const peer& p, const header& h, const join_request& r,
                       const uint8_t* mac) const;
    void send_challenge(peer& p);
    status send_parent_join(const header& h, const join_request& up, uint32_t member);
    status admit_group(const header& h, const join_request& r, group_state** out);
    void on_parent_reply(const header& h, const uint8_t* body);
    void on_child_nack(peer& p, const header& h, const uint8_t* body);
    void on_leave(peer& p, const header& h);
    bool member_gone(group_state& g, uint32_t member);  // true: the group was dropped
    void drop_group(group_state& g);
    void reply_joined(peer& p, const group_state& g, uint32_t member);
    void reply_nack(peer& p, const header& h, const status& why);
    void reply_stats(peer& p);
    void send_control(peer& p, packet_kind kind, uint64_t job, uint64_t comm, uint32_t member,
                      std::string_view body, uint32_t seq = 0, uint32_t slot = 0);

    switch_config cfg_;
    switch_stats stats_;
    drivers::datagram_stats retired_;  // of links closed
    double started_s_ = now_s();       // for the rates in stats_text()
    aggregator agg_;
    std::unique_ptr<sink> sink_;
    std::unique_ptr<drivers::datagram_listener> listener_;
    std::vector<std::unique_ptr<peer>> peers_;
    std::unique_ptr<peer> parent_;
    std::vector<std::unique_ptr<group_state>> groups_;
    drivers::fault::dice dice_;  // --drop/--dup, its own stream from cfg_.seed
    std::vector<uint8_t> ctrl_;  // one control packet being built
    double next_idle_check_s_                 = 0;
    bool parent_gone_                         = false;
    double next_accept_s_                     = 0;
    static constexpr double accept_interval_s = 0.001;  // new links wait at most this long
};

}  // namespace loom::inc
