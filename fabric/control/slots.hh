// SPDX-License-Identifier: Apache-2.0
// In-network slot admission (fabric/control: the controller's logic, no transport; loom-ctld
// serves it over HTTP). Each in-network member (a switch or a DPU) has a number of slots, the
// reductions it can hold at once. A job asks for an allocation for one communicator: the same
// number of slots on every aggregation node of its tree. The grant is all or nothing: every
// node grants or none does, so every rank of the communicator gets the in-network path or all
// of them fall back together; a refusal says in one line why (the node that is full, the
// quota, the node that is out of service).
//
// An allocation is a lease, like a member's: renewed by the job's heartbeats, expired after
// three periods without one (its slots are freed and it is forgotten), released by the job.
// When a node of its tree goes out of service (down, drained, left) the allocation is revoked:
// its slots are freed at once but the record stays, naming the node, so the job's next renewal
// learns why (410) rather than finding nothing. The record is forgotten three periods after
// the revocation or the job's last renewal attempt, whichever is later.
//
// The table does not hold capacities: they are the members' (given at join), passed to each
// grant as a snapshot, so a member rejoining with another capacity needs no bookkeeping here.
// Thread-safe: the HTTP workers and the sweep share one table.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "members.hh"

namespace loom::control {

/// The slots an in-network member has when its join does not say.
constexpr uint32_t default_slots = 64;

enum class allocation_state { active, revoked };
const char* allocation_state_name(allocation_state s);

struct allocation {
    uint64_t id = 0;
    std::string lease;  // renewals name it; unguessable
    std::string job;
    std::string comm;                // the communicator, unique within the job
    std::vector<std::string> nodes;  // the aggregation nodes, root first
    uint32_t slots         = 1;      // on each node
    allocation_state state = allocation_state::active;
    std::string revoked_because;        // "leaf1 is down", while revoked
    int64_t granted_unix_s = 0;         // wall clock, for people
    steady::time_point last_renewal{};  // not persisted: a restart grants a fresh grace
    uint64_t renewals = 0;
};

/// What a grant knows of one in-network member.
struct slot_node {
    member_kind kind  = member_kind::sw;
    uint32_t capacity = 0;
    std::string out;  // "" in service, else "down" or "drained"
};
/// Every in-network member by name (the node's id in the fabric).
using slot_nodes = std::map<std::string, slot_node>;

struct grant_request {
    std::string job;
    std::string comm;
    std::vector<std::string> nodes;  // the tree's aggregation nodes (no duplicates)
    uint32_t slots = 1;
};

/// Why a grant was refused; each is a metric label (slot_refusal_name).
enum class slot_refusal {
    none,
    no_tree,         // no aggregation node to grant on (the caller found no tree)
    unknown_node,    // a node is not an in-network member: its slots are unknown
    out_of_service,  // a node is down or drained
    no_slots,        // a node has fewer free slots than asked
    over_quota,      // the job would hold more than --slot-quota
    exists,          // the job holds an allocation for this communicator already
    table_full,      // the table holds its most allocations
    count_
};
const char* slot_refusal_name(slot_refusal r);

struct grant_result {
    slot_refusal refusal = slot_refusal::none;
    std::string why;  // one line, for the job and its user
    allocation granted;
};

/// Why a renewal was refused.
enum class renew_refusal { none, unknown, stale_lease, revoked };

class slot_table {
  public:
    /// `quota`: slots one job may hold in all (summed over its allocations' nodes); 0: none.
    slot_table(std::chrono::milliseconds period, uint64_t quota, size_t max_allocations);

    /// Grants `request` on every node or on none (see slot_refusal for the order of checks).
    grant_result grant(const grant_request& request, const slot_nodes& nodes);
    /// Renews `id`'s lease; a revoked one is refused with `*why` saying what revoked it (and
    /// its record kept three periods more, while the job keeps asking).
    renew_refusal renew(uint64_t id, const std::string& lease, std::string* why);
    /// Releases `id` (its slots are free); false when there is no such allocation.
    bool release(uint64_t id);
    /// Revokes every active allocation that uses a node that `nodes` lists out of service or
    /// does not list at all (it left); how many it revoked. A revoked record is kept three
    /// periods from now.
    size_t revoke_out(const slot_nodes& nodes);
    /// Forgets every allocation whose lease ran out (three periods); how many.
    size_t sweep(steady::time_point now);

    /// Slots in use on `node` by each job (active allocations only).
    std::map<std::string, std::map<std::string, uint64_t>> used_by_node() const;
    std::vector<allocation> snapshot() const;
    uint64_t next_id() const;
    uint64_t quota() const { return quota_; }
    /// Replaces the table with allocations read back from the state file: active ones get a
    /// fresh grace (the jobs' renewals resume against the restarted controller).
    void restore(std::vector<allocation> allocations, uint64_t next_id);

  private:
    uint64_t held_by_job(const std::string& job) const;  // mutex_ held
    uint64_t used_on(const std::string& node) const;     // mutex_ held

    const std::chrono::milliseconds period_;
    const uint64_t quota_;
    const size_t max_allocations_;
    mutable std::mutex mutex_;
    std::map<uint64_t, allocation> allocations_;
    uint64_t next_id_ = 1;
};

}  // namespace loom::control
