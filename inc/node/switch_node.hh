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
// Loss injection (drop, dup) applies to data packets in the receive path, so tests see the
// recovery of a lossy fabric through a real process; control packets are never dropped.
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
#include "inc/aggregator/aggregator.hh"
#include "inc/node/join.hh"
#include "inc/transport/link.hh"

namespace loom::inc {

struct switch_config {
    std::string listen;  // tcp:HOST:PORT (port 0: any) or shm:NAME
    std::string parent;  // empty: no parent (a root or a lone node)
    uint32_t slots     = 1024;
    uint32_t job_quota = 512;
    double drop = 0, dup = 0;  // probabilities per received data packet
    uint64_t seed            = 1;
    double connect_timeout_s = 5;  // to the parent
};

/// The node's own counters; the aggregator's are beside them in stats_text().
struct switch_stats {
    uint64_t links_accepted = 0, links_closed = 0;
    uint64_t packets_in = 0, bytes_in = 0, bytes_out = 0;
    uint64_t drops_injected = 0, dups_injected = 0;
    uint64_t retransmissions = 0;  // data packets flagged flag_resend
    uint64_t joins = 0, nacks = 0, leaves = 0, stats_queries = 0;
    uint64_t unexpected = 0;               // a kind that has no business on that link
    std::array<uint64_t, 10> malformed{};  // by parse_error
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

  private:
    struct peer {
        std::unique_ptr<link> l;
        bool is_parent = false;
    };
    enum class up_state { none, pending, joined };
    struct group_state {
        uint32_t job = 0, comm = 0;
        join_request req;
        std::vector<peer*> members;  // by member id; null: not joined
        uint32_t joined = 0;
        up_state up     = up_state::none;
        std::vector<std::pair<peer*, uint32_t>> pending;  // joins held until the parent answers
    };
    class sink;

    explicit switch_node(const switch_config& c);
    bool drain(peer& p);
    void handle(peer& p, const uint8_t* packet, size_t len);
    void reap();
    void send(peer& p, const uint8_t* packet, size_t len);
    group_state* find_group(uint32_t job, uint32_t comm);
    uint64_t next_random();

    // Control path (switch_control.cc).
    void on_join(peer& p, const header& h, const uint8_t* body);
    status admit_group(const header& h, const join_request& r, group_state** out);
    void on_parent_reply(const header& h, const uint8_t* body);
    void on_leave(peer& p, const header& h);
    bool member_gone(group_state& g, uint32_t member);  // true: the group was dropped
    void drop_group(group_state& g);
    void reply_joined(peer& p, const group_state& g, uint32_t member);
    void reply_nack(peer& p, const header& h, const status& why);
    void reply_stats(peer& p);
    void send_control(peer& p, packet_kind kind, uint32_t job, uint32_t comm, uint32_t member,
                      std::string_view body, uint32_t seq = 0, uint32_t slot = 0);

    switch_config cfg_;
    switch_stats stats_;
    link_stats retired_;          // of links closed
    double started_s_ = now_s();  // for the rates in stats_text()
    aggregator agg_;
    std::unique_ptr<sink> sink_;
    std::unique_ptr<listener> listener_;
    std::vector<std::unique_ptr<peer>> peers_;
    std::unique_ptr<peer> parent_;
    std::vector<std::unique_ptr<group_state>> groups_;
    uint64_t rng_ = 0;
    std::vector<uint8_t> ctrl_;  // one control packet being built
};

}  // namespace loom::inc
