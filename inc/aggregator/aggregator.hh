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
// alone (its result was lost). The last contribution completes the entry: the result is
// multicast to the group. An ack marks the member; when all acked, the entry may be reused.
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
    virtual void unicast(uint32_t job, uint32_t comm, uint32_t rank, const uint8_t* packet,
                         size_t len) = 0;
    /// To every member of the group.
    virtual void multicast(uint32_t job, uint32_t comm, const uint8_t* packet, size_t len) = 0;
};

struct aggregator_config {
    uint32_t total_slots    = 1024;                   // the node's slot pool
    uint32_t job_quota      = 512;                    // slots one job may hold over all its groups
    uint32_t max_members    = 1024;                   // largest communicator admitted
    uint32_t chunk_elements = max_payload_bytes / 2;  // largest chunk (bfloat16 fills it)
};

struct aggregator_stats {
    uint64_t contributions = 0;  // accepted, first time
    uint64_t duplicates    = 0;  // contributions already counted (resent results included)
    uint64_t results       = 0;  // entries completed and multicast
    uint64_t resent        = 0;  // results resent to one member
    uint64_t acks          = 0;
    uint64_t unknown_group = 0;  // packets of groups not admitted
    uint64_t bad_member    = 0;  // contributor outside the group
    uint64_t bad_slot      = 0;  // slot outside the group's range
    uint64_t stale         = 0;  // a phase older than both kept entries, or out of order
    uint64_t mismatched    = 0;  // dtype, op or count differs from the entry's
};

class aggregator {
  public:
    explicit aggregator(const aggregator_config& c = {});
    ~aggregator();
    aggregator(const aggregator&)            = delete;
    aggregator& operator=(const aggregator&) = delete;

    /// Admits (job, comm) with `members` ranks and `slots` slots. Errors: already admitted,
    /// members out of 1..max_members, slots 0, or the job's quota / the pool exhausted
    /// (LOOM_ERR_NO_RESOURCE: the clients fall back to software).
    status admit(uint32_t job, uint32_t comm, uint32_t members, uint32_t slots, bool deterministic);
    /// Frees the group's slots; packets of it are dropped from then on.
    void release(uint32_t job, uint32_t comm);

    /// One parsed packet (contribute or ack); results go out through `out`.
    void on_packet(const header& h, const uint8_t* payload, packet_sink& out);

    const aggregator_stats& stats() const { return stats_; }
    uint32_t slots_in_use() const { return used_slots_; }

  private:
    struct group;
    struct entry;
    group* find(uint32_t job, uint32_t comm);
    void contribute(group& g, const header& h, const uint8_t* payload, packet_sink& out);
    void complete(group& g, entry& e, packet_sink& out);
    void send_result(group& g, const entry& e, packet_sink& out, int to_rank);

    aggregator_config cfg_;
    aggregator_stats stats_;
    std::vector<std::unique_ptr<group>> groups_;
    uint32_t used_slots_ = 0;
    std::vector<uint8_t> out_;  // one packet being built
};

}  // namespace loom::inc
