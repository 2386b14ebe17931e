// SPDX-License-Identifier: Apache-2.0
// The controller's state as the API sees it: the member table, its store, the counters, the
// rate limiter and the token check. The HTTP layer (api.cc) only translates requests into
// calls here; the sweep runs on the main thread's timer.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/secret.hh"
#include "base/status.hh"
#include "control/members.hh"
#include "control/slots.hh"
#include "control/trees.hh"
#include "counters.hh"
#include "options.hh"
#include "rate_limit.hh"
#include "topology/fabric.hh"

namespace loom::ctld {

class controller {
  public:
    controller(const options& o, std::string_view token);

    /// Reads the state file back (members resume with a fresh grace) and the fabric (--fabric);
    /// nothing without them.
    status load();
    /// Writes the table to the state file (nothing without one). Writes are serialised, and
    /// each writes the table as it is when it starts, so the file never goes back in time.
    status persist();
    /// Marks down the members whose leases ran out, revokes the allocations that used a node
    /// now out of service, forgets the allocations whose leases ran out; counts them and
    /// persists the change.
    void sweep();
    /// Revokes the allocations that use a node out of service or gone (after a drain or a
    /// leave, so the job learns it at its next renewal); counts and persists them.
    void revoke_out();
    /// Every in-network member (switch, DPU) with its capacity and service state.
    control::slot_nodes in_network_nodes() const;
    /// Grants `request` all or nothing; a grant is on disk before it is returned.
    result<control::grant_result> grant(const control::grant_request& request);

    /// Whether `presented` is the token, in time that does not depend on where they differ
    /// or on the presented length.
    bool token_matches(std::string_view presented) const;

    control::member_table& members() { return members_; }
    control::slot_table& slots() { return slots_; }
    /// The fabric (--fabric), or null when the controller holds none.
    const topology::fabric* fabric() const { return fabric_ ? &*fabric_ : nullptr; }
    /// The fabric's nodes that are out of service now: each member that is down or drained,
    /// by its name, which is the node's id. A node that no member names is in service (a
    /// switch that does not join the control plane still forwards).
    control::out_of_service out_of_service() const;
    counters& stats() { return stats_; }
    rate_limiter& limiter() { return limiter_; }
    const options& config() const { return options_; }
    double uptime_s() const;
    int64_t heartbeat_ms() const { return members_.heartbeat_period().count(); }

  private:
    const options options_;
    control::member_table members_;
    control::slot_table slots_;
    std::optional<topology::fabric> fabric_;
    counters stats_;
    rate_limiter limiter_;
    std::mutex persist_mutex_;
    // The token is kept only as a keyed digest: comparisons are digest against digest.
    std::string digest_key_;
    digest256 token_digest_{};
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace loom::ctld
