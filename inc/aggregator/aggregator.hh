// SPDX-License-Identifier: Apache-2.0
// The aggregation node's logic (SwitchML-style slots), independent of any transport: the
// caller hands it parsed packets and gives it a sink to send through. loom-switch runs it
// over shm/tcp; the DPU data plane will run it over DPDK.
//
// Groups. A communicator admitted to the node (job, comm, members) gets `slots` slots out
// of the node's pool; a job's groups together stay within its quota, so one job cannot
// starve the others. Packets of groups that were not admitted are dropped and counted.
//
// Slots. The client streams a vector through a window of slots: chunk k of collective seq
// goes through slot k mod window, so the same slot is reused by keys (seq, offset) that
// only grow. A slot keeps two entries, as SwitchML's shadow copies: a member contributes to
// phase p+1 of a slot only after it received the result of phase p, so when p+1 starts,
// result p may still have to be resent to a member that lost it, but p−1 cannot: p
// completed, so every member contributed to p, so every member had received p−1. The entry
// of p+1 therefore replaces that of p−1. Per entry: the key, a contributor bitmap, the
// accumulated chunk, and an acknowledgement bitmap.
//
// Contributions. A first contribution from a member is reduced into the entry (or, in
// deterministic mode, stored in the member's row and reduced in rank order when the last
// one arrives, so float sums are bitwise reproducible whatever the arrival order). A
// duplicate is ignored, but if the entry is complete the result is resent to that member
// alone (its result was lost). The contribution that makes `expected` completes the entry:
// the result is multicast to the group. An ack marks the member.
//
// Trees. A node may sit below a parent (group_config::upstream): a completed entry is then
// sent up as one contribution (contributor = up_index) and the entry waits; the parent's
// result is stored and answered to the members as a root would. Loss recovery needs no
// timers in the nodes: a member's retransmission reaching a waiting entry re-sends the
// upward contribution, and the parent answers a duplicate with its result. A parent's
// members are nodes (members_are_nodes): it always multicasts data, since it cannot know
// which child holds a reduce's root.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.hh"
#include "inc/protocol/packet.hh"

namespace loom::inc {

/// Where the aggregator's packets go.
class packet_sink {
  public:
    virtual ~packet_sink() = default;
    /// To one member of the group.
    virtual void unicast(uint64_t job, uint64_t comm, uint32_t rank, const uint8_t* packet,
                         size_t len) = 0;
    /// To every member of the group.
    virtual void multicast(uint64_t job, uint64_t comm, const uint8_t* packet, size_t len) = 0;
    /// To the parent node (groups admitted with upstream). The default drops: a sink of a
    /// node without parent never admits such groups.
    virtual void upstream(uint64_t /*job*/, uint64_t /*comm*/, const uint8_t* /*packet*/,
                          size_t /*len*/) {}
};

/// One communicator's shape at this node.
struct group_config {
    uint64_t job = 0, comm = 0;
    // Contributor ids are 0..members-1: comm ranks at a leaf, child indices at a parent.
    uint32_t members       = 1;
    uint32_t expected      = 1;  // distinct contributions that complete an entry
    uint32_t slots         = 1;
    bool deterministic     = false;
    bool upstream          = false;  // forward completed entries to the parent, not answer
    uint32_t up_index      = 0;      // this node's contributor id at the parent
    bool members_are_nodes = false;  // members are child nodes: multicast results with data
};

struct aggregator_config {
    uint32_t total_slots    = 1024;                   // the node's slot pool
    uint32_t job_quota      = 512;                    // slots one job may hold over all its groups
    uint32_t max_members    = 1024;                   // largest communicator admitted
    uint32_t chunk_elements = max_payload_bytes / 2;  // largest chunk (bfloat16 fills it)
    // Memory for the groups' entries (a deterministic group keeps a chunk per member and
    // entry): the node's and one job's, checked before a group is allocated.
    uint64_t memory_limit = uint64_t(256) << 20;
    uint64_t job_memory   = uint64_t(64) << 20;
};

/// Bytes a group of this shape holds at the node (its entries, bitmaps and chunks).
uint64_t group_bytes(const group_config& c);

struct aggregator_stats {
    uint64_t contributions   = 0;  // accepted, first time
    uint64_t duplicates      = 0;  // contributions already counted (resent results included)
    uint64_t results         = 0;  // entries completed and multicast
    uint64_t resent          = 0;  // results resent to one member
    uint64_t acks            = 0;
    uint64_t unknown_group   = 0;  // packets of groups not admitted
    uint64_t bad_member      = 0;  // contributor outside the group
    uint64_t bad_slot        = 0;  // slot outside the group's range
    uint64_t stale           = 0;  // a phase older than both kept entries, or out of order
    uint64_t mismatched      = 0;  // dtype, op or count differs from the entry's
    uint64_t forwarded       = 0;  // completed entries sent to the parent
    uint64_t reforwarded     = 0;  // upward contributions re-sent (a member retransmitted)
    uint64_t from_parent     = 0;  // parent results answered to the members
    uint64_t awaiting_parent = 0;  // entries waiting for the parent's result now
};

class aggregator {
  public:
    explicit aggregator(const aggregator_config& c = {});
    ~aggregator();
    aggregator(const aggregator&)            = delete;
    aggregator& operator=(const aggregator&) = delete;

    /// Admits the group. Errors: already admitted, members out of 1..max_members, expected
    /// out of 1..members, slots 0, or the job's quota / the pool / a memory limit exhausted
    /// (LOOM_ERR_NO_RESOURCE: the clients fall back to software). Every limit is checked
    /// in 64-bit arithmetic before anything is allocated.
    status admit(const group_config& c);
    /// Frees the group's slots; packets of it are dropped from then on.
    void release(uint64_t job, uint64_t comm);

    /// One parsed packet: contribute or ack from a member, or result from the parent (an
    /// upstream group's); results go out through `out`.
    void on_packet(const header& h, const uint8_t* payload, packet_sink& out);

    /// True when h's entry (its group, slot, seq and offset) has its result: a contribution
    /// to it is a retransmission that the result answers, even in a group that can complete
    /// no new entry.
    bool answered(const header& h);

    const aggregator_stats& stats() const { return stats_; }
    uint32_t slots_in_use() const { return used_slots_; }
    uint64_t bytes_in_use() const { return used_bytes_; }

  private:
    struct group;
    struct entry;
    group* find(uint64_t job, uint64_t comm);
    void contribute(group& g, const header& h, const uint8_t* payload, packet_sink& out);
    static entry* find_entry(group& g, const header& h);
    entry* entry_for(group& g, const header& h);
    bool accepts(const entry& e, const header& h);
    void store(group& g, entry& e, const header& h, const uint8_t* payload);
    void complete(group& g, entry& e, packet_sink& out);
    void answer(group& g, entry& e, packet_sink& out);
    void from_parent(group& g, const header& h, const uint8_t* payload, packet_sink& out);
    void send_up(group& g, const entry& e, packet_sink& out);
    static header packet_of(const group& g, const entry& e, packet_kind kind, bool no_data);
    void send_result(group& g, const entry& e, packet_sink& out, int to_member);

    aggregator_config cfg_;
    aggregator_stats stats_;
    std::vector<std::unique_ptr<group>> groups_;
    uint32_t used_slots_ = 0;
    uint64_t used_bytes_ = 0;
    std::vector<uint8_t> out_;  // one packet being built
};

}  // namespace loom::inc
