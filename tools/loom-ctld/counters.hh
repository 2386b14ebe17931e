// SPDX-License-Identifier: Apache-2.0
// What loom-ctld counts (joins, leaves, expired leases, heartbeats, refusals by reason, slot
// grants and their refusals) and its /metrics page in the Prometheus text format.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "control/members.hh"
#include "control/slots.hh"

namespace loom::ctld {

/// Why a request was refused: one per HTTP status loom-ctld answers with.
enum class refusal {
    bad_request,         // 400: malformed JSON, a missing or wrong field, a bad request line
    unauthorized,        // 401: no token or the wrong one
    not_found,           // 404: no such path or member
    method_not_allowed,  // 405
    conflict,            // 409: a slot grant refused (full, quota, out of service)
    gone,                // 410: a heartbeat of a down member or an old lease, a revoked allocation
    too_large,           // 413: the body is over --max-body
    rate_limited,        // 429: the client is over --rate
    unavailable,         // 503: the member table is full
    other,               // any other 4xx/5xx
    count_
};
const char* refusal_name(refusal r);
/// The refusal an HTTP status stands for.
refusal refusal_of_status(int http_status);

struct counters {
    std::atomic<uint64_t> joins{0}, leaves{0}, leases_expired{0}, heartbeats{0}, requests{0};
    std::atomic<uint64_t> drains{0};  // drains and undrains
    std::array<std::atomic<uint64_t>, size_t(refusal::count_)> refused{};
    // Slot grants by outcome: [slot_refusal::none] counts the grants made.
    std::array<std::atomic<uint64_t>, size_t(control::slot_refusal::count_)> slot_refused{};
    std::atomic<uint64_t> allocations_released{0}, allocations_revoked{0}, allocations_expired{0};
    std::atomic<uint64_t> renewals{0};

    void refuse(refusal r) { refused[size_t(r)].fetch_add(1, std::memory_order_relaxed); }
};

/// The /metrics page: members by kind and state (every pair, zeros included), the counters,
/// refusals by reason (every reason), uptime.
std::string metrics_text(const counters& c, const std::vector<control::member>& members,
                         double uptime_s);
/// The slots' part of /metrics: capacity and use per in-network member, allocations by
/// state, grants, refusals by reason (every reason), releases, revocations, expiries.
std::string slot_metrics_text(const counters& c, const std::vector<control::member>& members,
                              const std::vector<control::allocation>& allocations);

}  // namespace loom::ctld
