// SPDX-License-Identifier: Apache-2.0
// The member table and its leases (members.hh).
#include "members.hh"

#include <ctime>

#include "base/secret.hh"

namespace loom::control {

const char* kind_name(member_kind k) {
    switch (k) {
        case member_kind::host:
            return "host";
        case member_kind::dpu:
            return "dpu";
        case member_kind::sw:
            return "switch";
    }
    return "host";
}

std::optional<member_kind> kind_from_name(const std::string& name) {
    for (member_kind k : all_kinds) {
        if (name == kind_name(k)) {
            return k;
        }
    }
    return std::nullopt;
}

const char* state_name(member_state s) {
    return s == member_state::up ? "up" : "down";
}

member_table::member_table(std::chrono::milliseconds heartbeat_period, size_t max_members)
    : period_(heartbeat_period), max_members_(max_members) {}

result<member> member_table::join(const join_request& request) {
    // A lease id is unguessable, so one member cannot renew another's lease by accident.
    auto lease = random_secret_hex();
    if (!lease) {
        return lease.error();
    }
    std::lock_guard lock(mutex_);
    member* m = nullptr;
    for (auto& [id, existing] : members_) {
        if (existing.name == request.name) {
            m = &existing;
            break;
        }
    }
    if (m == nullptr) {
        if (members_.size() >= max_members_) {
            return not_applicable("the member table is full (" + std::to_string(max_members_) +
                                  " members, --max-members)");
        }
        uint64_t id = next_id_++;
        m           = &members_[id];
        m->id       = id;
        m->name     = request.name;
    }
    m->kind           = request.kind;
    m->addresses      = request.addresses;
    m->slots          = request.kind == member_kind::host ? 0 : request.slots;
    m->lease          = lease->substr(0, 32);
    m->state          = member_state::up;
    m->joined_unix_s  = int64_t(std::time(nullptr));
    m->last_heartbeat = steady::now();
    m->heartbeats     = 0;
    return *m;
}

lease_refusal member_table::heartbeat(uint64_t id, const std::string& lease) {
    std::lock_guard lock(mutex_);
    auto it = members_.find(id);
    if (it == members_.end()) {
        return lease_refusal::unknown_member;
    }
    member& m = it->second;
    if (m.state == member_state::down) {
        return lease_refusal::down;
    }
    if (m.lease != lease) {
        return lease_refusal::stale_lease;
    }
    m.last_heartbeat = steady::now();
    ++m.heartbeats;
    return lease_refusal::none;
}

bool member_table::leave(uint64_t id) {
    std::lock_guard lock(mutex_);
    return members_.erase(id) > 0;
}

bool member_table::set_drained(uint64_t id, bool drained) {
    std::lock_guard lock(mutex_);
    auto it = members_.find(id);
    if (it == members_.end()) {
        return false;
    }
    it->second.drained = drained;
    return true;
}

size_t member_table::sweep(steady::time_point now) {
    std::lock_guard lock(mutex_);
    size_t marked = 0;
    for (auto& [id, m] : members_) {
        if (m.state == member_state::up &&
            now - m.last_heartbeat > missed_heartbeats_to_down * period_) {
            m.state = member_state::down;
            ++marked;
        }
    }
    return marked;
}

std::vector<member> member_table::snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<member> out;
    out.reserve(members_.size());
    for (const auto& [id, m] : members_) {
        out.push_back(m);
    }
    return out;
}

uint64_t member_table::next_id() const {
    std::lock_guard lock(mutex_);
    return next_id_;
}

void member_table::restore(std::vector<member> members, uint64_t next_id) {
    std::lock_guard lock(mutex_);
    members_.clear();
    next_id_ = next_id;
    auto now = steady::now();
    for (member& m : members) {
        m.last_heartbeat = now;
        if (m.id >= next_id_) {
            next_id_ = m.id + 1;
        }
        members_[m.id] = std::move(m);
    }
}

}  // namespace loom::control
