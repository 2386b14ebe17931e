// SPDX-License-Identifier: Apache-2.0
// What loom-ctld counts (joins, leaves, expired leases, heartbeats, refusals by reason) and
// its /metrics page in the Prometheus text format.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "control/members.hh"

namespace loom::ctld {

/// Why a request was refused: one per HTTP status loom-ctld answers with.
enum class refusal {
    bad_request,         // 400: malformed JSON, a missing or wrong field, a bad request line
    unauthorized,        // 401: no token or the wrong one
    not_found,           // 404: no such path or member
    method_not_allowed,  // 405
    gone,                // 410: a heartbeat of a down member or an old lease
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

    void refuse(refusal r) { refused[size_t(r)].fetch_add(1, std::memory_order_relaxed); }
};

/// The /metrics page: members by kind and state (every pair, zeros included), the counters,
/// refusals by reason (every reason), uptime.
std::string metrics_text(const counters& c, const std::vector<control::member>& members,
                         double uptime_s);

}  // namespace loom::ctld
