// SPDX-License-Identifier: Apache-2.0
// The members of the control plane and their leases (fabric/control: the controller's logic,
// free of any transport; loom-ctld serves it over HTTP): hosts (their agents), DPUs and
// switches.
// A member joins and gets a lease that its heartbeats renew; a lease not renewed for three
// heartbeat periods expires and the member is `down` until it joins again. Thread-safe: the
// HTTP workers and the sweep share one table.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hh"

namespace loom::control {

using steady = std::chrono::steady_clock;

enum class member_kind { host, dpu, sw };
enum class member_state { up, down };

/// The member kinds in their wire spelling, and every kind (for the metrics' zero rows).
const char* kind_name(member_kind k);
std::optional<member_kind> kind_from_name(const std::string& name);
constexpr member_kind all_kinds[] = {member_kind::host, member_kind::dpu, member_kind::sw};
const char* state_name(member_state s);

/// A lease expires after this many heartbeat periods without a heartbeat.
constexpr int missed_heartbeats_to_down = 3;

struct member {
    uint64_t id = 0;
    std::string name;  // unique: joining under a taken name is the same member rejoining
    member_kind kind = member_kind::host;
    std::vector<std::string> addresses;
    /// In-network slots (a switch's or a DPU's; 0 for a host): the reductions it holds at
    /// once, leased to jobs by the slot table (slots.hh).
    uint32_t slots = 0;
    std::string lease;  // renewed by heartbeats naming it; a new one at every join
    member_state state = member_state::up;
    /// Taken out of service by an operator (loomctl drain): it keeps its lease and its
    /// heartbeats, but routes and trees leave it out until it is undrained. Kept across a
    /// rejoin and a restart: a drain is the operator's decision, not the member's.
    bool drained          = false;
    int64_t joined_unix_s = 0;            // wall clock, for people
    steady::time_point last_heartbeat{};  // not persisted: a restart grants a fresh grace
    uint64_t heartbeats = 0;
};

/// What a join asks for.
struct join_request {
    std::string name;
    member_kind kind = member_kind::host;
    std::vector<std::string> addresses;
    uint32_t slots = 0;  // ignored for a host
};

/// Why a heartbeat or a leave was refused.
enum class lease_refusal { none, unknown_member, down, stale_lease };

class member_table {
  public:
    member_table(std::chrono::milliseconds heartbeat_period, size_t max_members);

    /// Adds the member, or renews the one of that name (a fresh lease, `up` again). Fails
    /// only when the table is full.
    result<member> join(const join_request& request);
    /// Renews `id`'s lease. A down member or an old lease is refused: it must join again.
    lease_refusal heartbeat(uint64_t id, const std::string& lease);
    /// Removes `id`; false when there is no such member.
    bool leave(uint64_t id);
    /// Drains or undrains `id`; false when there is no such member.
    bool set_drained(uint64_t id, bool drained);
    /// Marks `down` every member whose lease ran out; how many it marked.
    size_t sweep(steady::time_point now);

    std::vector<member> snapshot() const;
    uint64_t next_id() const;
    /// Replaces the table with members read back from the state file: `up` members get a
    /// fresh grace (their heartbeats resume against the restarted controller).
    void restore(std::vector<member> members, uint64_t next_id);

    std::chrono::milliseconds heartbeat_period() const { return period_; }

  private:
    const std::chrono::milliseconds period_;
    const size_t max_members_;
    mutable std::mutex mutex_;
    std::map<uint64_t, member> members_;
    uint64_t next_id_ = 1;
};

}  // namespace loom::control
