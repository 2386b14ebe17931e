// SPDX-License-Identifier: Apache-2.0
// Counters and the /metrics page (counters.hh).
#include "counters.hh"

#include <loom/loom.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace loom::ctld {

using namespace loom::control;  // the table this file serves

const char* refusal_name(refusal r) {
    switch (r) {
        case refusal::bad_request:
            return "bad_request";
        case refusal::unauthorized:
            return "unauthorized";
        case refusal::not_found:
            return "not_found";
        case refusal::method_not_allowed:
            return "method_not_allowed";
        case refusal::conflict:
            return "conflict";
        case refusal::gone:
            return "gone";
        case refusal::too_large:
            return "too_large";
        case refusal::rate_limited:
            return "rate_limited";
        case refusal::unavailable:
            return "unavailable";
        case refusal::other:
        case refusal::count_:
            break;
    }
    return "other";
}

refusal refusal_of_status(int http_status) {
    switch (http_status) {
        case 400:
            return refusal::bad_request;
        case 401:
            return refusal::unauthorized;
        case 404:
            return refusal::not_found;
        case 405:
            return refusal::method_not_allowed;
        case 409:
            return refusal::conflict;
        case 410:
            return refusal::gone;
        case 413:
            return refusal::too_large;
        case 429:
            return refusal::rate_limited;
        case 503:
            return refusal::unavailable;
        default:
            return refusal::other;
    }
}

namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name_and_labels, double value) {
    char text[64];
    std::snprintf(text, sizeof text, " %.17g\n", value);
    out += name_and_labels + text;
}

}  // namespace

std::string metrics_text(const counters& c, const std::vector<member>& members, double uptime_s) {
    std::map<std::pair<member_kind, member_state>, uint64_t> by;
    for (const member& m : members) {
        ++by[{m.kind, m.state}];
    }
    std::string out;
    family(out, "loom_ctld_members", "gauge", "Members of the control plane by kind and state.");
    for (member_kind k : all_kinds) {
        for (member_state s : {member_state::up, member_state::down}) {
            sample(out,
                   std::string("loom_ctld_members{kind=\"") + kind_name(k) + "\",state=\"" +
                       state_name(s) + "\"}",
                   double(by[{k, s}]));
        }
    }
    auto counter = [&](const char* name, const char* help, const std::atomic<uint64_t>& v) {
        family(out, name, "counter", help);
        sample(out, name, double(v.load()));
    };
    counter("loom_ctld_joins_total", "Joins accepted (a rejoin counts).", c.joins);
    counter("loom_ctld_leaves_total", "Members that left.", c.leaves);
    counter("loom_ctld_leases_expired_total",
            "Leases that expired (three heartbeat periods missed): members marked down.",
            c.leases_expired);
    counter("loom_ctld_heartbeats_total", "Heartbeats accepted.", c.heartbeats);
    counter("loom_ctld_drains_total", "Members drained or undrained by an operator.", c.drains);
    family(out, "loom_ctld_members_drained", "gauge", "Members out of service by an operator.");
    sample(out, "loom_ctld_members_drained",
           double(std::count_if(members.begin(), members.end(),
                                [](const member& m) { return m.drained; })));
    counter("loom_ctld_requests_total", "HTTP requests answered, refused ones included.",
            c.requests);
    family(out, "loom_ctld_refused_total", "counter", "Requests refused, by reason.");
    for (size_t r = 0; r < size_t(refusal::count_); ++r) {
        sample(out,
               std::string("loom_ctld_refused_total{reason=\"") + refusal_name(refusal(r)) + "\"}",
               double(c.refused[r].load()));
    }
    family(out, "loom_ctld_uptime_seconds", "gauge", "Seconds since loom-ctld started.");
    sample(out, "loom_ctld_uptime_seconds", uptime_s);
    family(out, "loom_ctld_build_info", "gauge", "The version of loom-ctld.");
    sample(out, std::string("loom_ctld_build_info{version=\"") + loom_version() + "\"}", 1);
    return out;
}

std::string slot_metrics_text(const counters& c, const std::vector<member>& members,
                              const std::vector<allocation>& allocations) {
    std::map<std::string, uint64_t> used;
    uint64_t active = 0;
    for (const allocation& a : allocations) {
        if (a.state == allocation_state::active) {
            ++active;
            for (const std::string& n : a.nodes) {
                used[n] += a.slots;
            }
        }
    }
    std::string out;
    family(out, "loom_ctld_slots_capacity", "gauge",
           "In-network slots of each switch and DPU member.");
    for (const member& m : members) {
        if (m.kind != member_kind::host) {
            sample(out, "loom_ctld_slots_capacity{member=\"" + m.name + "\"}", double(m.slots));
        }
    }
    family(out, "loom_ctld_slots_used", "gauge",
           "In-network slots held by active allocations, per switch and DPU member.");
    for (const member& m : members) {
        if (m.kind != member_kind::host) {
            sample(out, "loom_ctld_slots_used{member=\"" + m.name + "\"}", double(used[m.name]));
        }
    }
    family(out, "loom_ctld_allocations", "gauge", "Slot allocations by state.");
    sample(out, "loom_ctld_allocations{state=\"active\"}", double(active));
    sample(out, "loom_ctld_allocations{state=\"revoked\"}", double(allocations.size() - active));
    family(out, "loom_ctld_slot_grants_total", "counter", "Slot allocations granted.");
    sample(out, "loom_ctld_slot_grants_total",
           double(c.slot_refused[size_t(slot_refusal::none)].load()));
    family(out, "loom_ctld_slot_refusals_total", "counter", "Slot grants refused, by reason.");
    for (size_t r = 1; r < size_t(slot_refusal::count_); ++r) {
        sample(out,
               std::string("loom_ctld_slot_refusals_total{reason=\"") +
                   slot_refusal_name(slot_refusal(r)) + "\"}",
               double(c.slot_refused[r].load()));
    }
    auto counter = [&](const char* name, const char* help, const std::atomic<uint64_t>& v) {
        family(out, name, "counter", help);
        sample(out, name, double(v.load()));
    };
    counter("loom_ctld_allocations_released_total", "Allocations released by their jobs.",
            c.allocations_released);
    counter("loom_ctld_allocations_revoked_total",
            "Allocations revoked because a node of their tree went out of service.",
            c.allocations_revoked);
    counter("loom_ctld_allocations_expired_total",
            "Allocations forgotten after three heartbeat periods without a renewal.",
            c.allocations_expired);
    counter("loom_ctld_allocation_renewals_total", "Allocation renewals accepted.", c.renewals);
    return out;
}

}  // namespace loom::ctld
