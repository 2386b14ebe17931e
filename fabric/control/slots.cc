// SPDX-License-Identifier: Apache-2.0
// In-network slot admission (slots.hh).
#include "slots.hh"

#include <ctime>

#include "base/secret.hh"

namespace loom::control {

const char* allocation_state_name(allocation_state s) {
    return s == allocation_state::active ? "active" : "revoked";
}

const char* slot_refusal_name(slot_refusal r) {
    switch (r) {
        case slot_refusal::none:
            return "none";
        case slot_refusal::no_tree:
            return "no_tree";
        case slot_refusal::unknown_node:
            return "unknown_node";
        case slot_refusal::out_of_service:
            return "out_of_service";
        case slot_refusal::no_slots:
            return "no_slots";
        case slot_refusal::over_quota:
            return "over_quota";
        case slot_refusal::exists:
            return "exists";
        case slot_refusal::table_full:
            return "table_full";
        case slot_refusal::count_:
            break;
    }
    return "none";
}

namespace {

// What an allocation holds in all: its slots on each of its nodes (the quota's unit).
uint64_t held(const allocation& a) {
    return a.state == allocation_state::active ? uint64_t(a.slots) * a.nodes.size() : 0;
}

grant_result refused(slot_refusal r, std::string why) {
    grant_result out;
    out.refusal = r;
    out.why     = std::move(why);
    return out;
}

}  // namespace

slot_table::slot_table(std::chrono::milliseconds period, uint64_t quota, size_t max_allocations)
    : period_(period), quota_(quota), max_allocations_(max_allocations) {}

uint64_t slot_table::held_by_job(const std::string& job) const {
    uint64_t sum = 0;
    for (const auto& [id, a] : allocations_) {
        if (a.job == job) {
            sum += held(a);
        }
    }
    return sum;
}

uint64_t slot_table::used_on(const std::string& node) const {
    uint64_t sum = 0;
    for (const auto& [id, a] : allocations_) {
        if (a.state == allocation_state::active) {
            for (const std::string& n : a.nodes) {
                if (n == node) {
                    sum += a.slots;
                }
            }
        }
    }
    return sum;
}

grant_result slot_table::grant(const grant_request& request, const slot_nodes& nodes) {
    if (request.nodes.empty()) {
        return refused(slot_refusal::no_tree, "no aggregation node is up");
    }
    auto lease = random_secret_hex();
    if (!lease) {
        return refused(slot_refusal::table_full, lease.error().message());
    }
    std::lock_guard lock(mutex_);
    // Checked in this order, all before anything is taken: the communicator's own record, the
    // table's bound, the job's quota, then each node root first, so the reason names the
    // first node (nearest the root) that stands in the way.
    for (const auto& [id, a] : allocations_) {
        if (a.job == request.job && a.comm == request.comm) {
            return refused(slot_refusal::exists,
                           "job " + request.job + " holds allocation " + std::to_string(id) +
                               " for communicator " + request.comm + " already (" +
                               allocation_state_name(a.state) + "): release it first");
        }
    }
    if (allocations_.size() >= max_allocations_) {
        return refused(
            slot_refusal::table_full,
            "the allocation table is full (" + std::to_string(max_allocations_) + " allocations)");
    }
    uint64_t asks = uint64_t(request.slots) * request.nodes.size();
    if (quota_ > 0) {
        uint64_t holds = held_by_job(request.job);
        if (holds + asks > quota_) {
            return refused(slot_refusal::over_quota,
                           "job " + request.job + " is over its quota of " +
                               std::to_string(quota_) + " slots (it holds " +
                               std::to_string(holds) + ", this communicator asks " +
                               std::to_string(asks) + ")");
        }
    }
    for (const std::string& name : request.nodes) {
        auto it = nodes.find(name);
        if (it == nodes.end()) {
            return refused(slot_refusal::unknown_node,
                           name +
                               " is not an in-network member (no switch or DPU of that name "
                               "has joined): its slots are unknown");
        }
        const slot_node& n = it->second;
        if (!n.out.empty()) {
            return refused(slot_refusal::out_of_service,
                           std::string(kind_name(n.kind)) + " " + name + " is " + n.out);
        }
        uint64_t used = used_on(name);
        uint64_t free = used >= n.capacity ? 0 : n.capacity - used;
        if (free < request.slots) {
            return refused(slot_refusal::no_slots, std::string(kind_name(n.kind)) + " " + name +
                                                       " has " + std::to_string(free) + " of " +
                                                       std::to_string(n.capacity) +
                                                       " slots free (this communicator asks " +
                                                       std::to_string(request.slots) + ")");
        }
    }
    uint64_t id      = next_id_++;
    allocation a     = {};
    a.id             = id;
    a.lease          = lease->substr(0, 32);
    a.job            = request.job;
    a.comm           = request.comm;
    a.nodes          = request.nodes;
    a.slots          = request.slots;
    a.granted_unix_s = int64_t(std::time(nullptr));
    a.last_renewal   = steady::now();
    grant_result out;
    out.granted = allocations_[id] = std::move(a);
    return out;
}

renew_refusal slot_table::renew(uint64_t id, const std::string& lease, std::string* why) {
    std::lock_guard lock(mutex_);
    auto it = allocations_.find(id);
    if (it == allocations_.end()) {
        return renew_refusal::unknown;
    }
    allocation& a = it->second;
    if (a.lease != lease) {
        return renew_refusal::stale_lease;
    }
    if (a.state == allocation_state::revoked) {
        // The job is still there and asking: the record stays while it asks.
        a.last_renewal = steady::now();
        *why           = a.revoked_because;
        return renew_refusal::revoked;
    }
    a.last_renewal = steady::now();
    ++a.renewals;
    return renew_refusal::none;
}

bool slot_table::release(uint64_t id) {
    std::lock_guard lock(mutex_);
    return allocations_.erase(id) > 0;
}

size_t slot_table::revoke_out(const slot_nodes& nodes) {
    std::lock_guard lock(mutex_);
    size_t revoked = 0;
    auto now       = steady::now();
    for (auto& [id, a] : allocations_) {
        if (a.state != allocation_state::active) {
            continue;
        }
        for (const std::string& name : a.nodes) {
            auto it = nodes.find(name);
            if (it == nodes.end()) {
                a.revoked_because = name + " left the control plane";
            } else if (!it->second.out.empty()) {
                a.revoked_because =
                    std::string(kind_name(it->second.kind)) + " " + name + " is " + it->second.out;
            } else {
                continue;
            }
            a.state = allocation_state::revoked;
            // Three periods from now for the job to learn why, however long ago it renewed.
            a.last_renewal = now;
            ++revoked;
            break;
        }
    }
    return revoked;
}

size_t slot_table::sweep(steady::time_point now) {
    std::lock_guard lock(mutex_);
    size_t expired = 0;
    for (auto it = allocations_.begin(); it != allocations_.end();) {
        if (now - it->second.last_renewal > missed_heartbeats_to_down * period_) {
            it = allocations_.erase(it);
            ++expired;
        } else {
            ++it;
        }
    }
    return expired;
}

std::map<std::string, std::map<std::string, uint64_t>> slot_table::used_by_node() const {
    std::lock_guard lock(mutex_);
    std::map<std::string, std::map<std::string, uint64_t>> out;
    for (const auto& [id, a] : allocations_) {
        if (a.state == allocation_state::active) {
            for (const std::string& n : a.nodes) {
                out[n][a.job] += a.slots;
            }
        }
    }
    return out;
}

std::vector<allocation> slot_table::snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<allocation> out;
    out.reserve(allocations_.size());
    for (const auto& [id, a] : allocations_) {
        out.push_back(a);
    }
    return out;
}

uint64_t slot_table::next_id() const {
    std::lock_guard lock(mutex_);
    return next_id_;
}

void slot_table::restore(std::vector<allocation> allocations, uint64_t next_id) {
    std::lock_guard lock(mutex_);
    allocations_.clear();
    next_id_ = next_id;
    auto now = steady::now();
    for (allocation& a : allocations) {
        a.last_renewal = now;
        if (a.id >= next_id_) {
            next_id_ = a.id + 1;
        }
        allocations_[a.id] = std::move(a);
    }
}

}  // namespace loom::control
