// SPDX-License-Identifier: Apache-2.0
// The controller's state (controller.hh).
#include "controller.hh"

#include <iostream>

#include "control/store_file.hh"

namespace loom::ctld {

using namespace loom::control;  // the table this file serves

controller::controller(const options& o, std::string_view token)
    : options_(o),
      members_(std::chrono::milliseconds(int64_t(o.heartbeat_s * 1000 + 0.5)), o.max_members),
      // Allocations are bounded like members: one per communicator, few per job.
      slots_(members_.heartbeat_period(), o.slot_quota, o.max_members),
      limiter_(o.rate_per_s) {
    // A key of this process only: a digest seen elsewhere says nothing about the token.
    auto key      = random_secret_hex();
    digest_key_   = key ? *key : std::string(token);
    token_digest_ = hmac_sha256(digest_key_, token);
}

bool controller::token_matches(std::string_view presented) const {
    digest256 d = hmac_sha256(digest_key_, presented);
    return equal_constant_time(d, token_digest_);
}

status controller::load() {
    if (!options_.fabric.empty()) {
        auto f = topology::load_fabric(options_.fabric);
        if (!f) {
            status st = f.error();
            return st.prefix("--fabric: ");
        }
        fabric_ = std::move(f).value();
    }
    if (options_.state_file.empty()) {
        return status::ok();
    }
    auto stored = load_state(options_.state_file);
    if (!stored) {
        return stored.error();
    }
    members_.restore(std::move(stored->members), stored->next_id);
    slots_.restore(std::move(stored->allocations), stored->next_allocation_id);
    return status::ok();
}

status controller::persist() {
    if (options_.state_file.empty()) {
        return status::ok();
    }
    std::lock_guard lock(persist_mutex_);
    stored_table table;
    table.members            = members_.snapshot();
    table.next_id            = members_.next_id();
    table.allocations        = slots_.snapshot();
    table.next_allocation_id = slots_.next_id();
    return save_state(options_.state_file, table);
}

void controller::sweep() {
    auto now       = steady::now();
    size_t marked  = members_.sweep(now);
    size_t revoked = slots_.revoke_out(in_network_nodes());
    size_t expired = slots_.sweep(now);
    if (marked + revoked + expired == 0) {
        return;
    }
    stats_.leases_expired.fetch_add(marked);
    stats_.allocations_revoked.fetch_add(revoked);
    stats_.allocations_expired.fetch_add(expired);
    if (status st = persist(); !st) {
        std::cerr << "loom-ctld: " << st.message() << std::endl;
    }
}

void controller::revoke_out() {
    size_t revoked = slots_.revoke_out(in_network_nodes());
    if (revoked == 0) {
        return;
    }
    stats_.allocations_revoked.fetch_add(revoked);
    if (status st = persist(); !st) {
        std::cerr << "loom-ctld: " << st.message() << std::endl;
    }
}

slot_nodes controller::in_network_nodes() const {
    slot_nodes out;
    for (const member& m : members_.snapshot()) {
        if (m.kind == member_kind::host) {
            continue;
        }
        slot_node& n = out[m.name];
        n.kind       = m.kind;
        n.capacity   = m.slots;
        n.out        = m.state == member_state::down ? "down" : m.drained ? "drained" : "";
    }
    return out;
}

result<grant_result> controller::grant(const grant_request& request) {
    // A node that goes out between this snapshot and the grant is caught by the next sweep's
    // revoke_out, a quarter period later: the job learns it at its next renewal.
    grant_result got = slots_.grant(request, in_network_nodes());
    stats_.slot_refused[size_t(got.refusal)].fetch_add(1, std::memory_order_relaxed);
    if (got.refusal != slot_refusal::none) {
        return got;
    }
    // Answered only once on disk: a job told it holds slots keeps them across a restart.
    if (status st = persist(); !st) {
        slots_.release(got.granted.id);
        return st;
    }
    return got;
}

control::out_of_service controller::out_of_service() const {
    control::out_of_service out;
    for (const member& m : members_.snapshot()) {
        if (m.state == member_state::down) {
            out[m.name] = "down";
        } else if (m.drained) {
            out[m.name] = "drained";
        }
    }
    return out;
}

double controller::uptime_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

}  // namespace loom::ctld
