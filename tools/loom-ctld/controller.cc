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
    return status::ok();
}

status controller::persist() {
    if (options_.state_file.empty()) {
        return status::ok();
    }
    std::lock_guard lock(persist_mutex_);
    return save_state(options_.state_file, members_.snapshot(), members_.next_id());
}

void controller::sweep() {
    size_t marked = members_.sweep(steady::now());
    if (marked == 0) {
        return;
    }
    stats_.leases_expired.fetch_add(marked);
    if (status st = persist(); !st) {
        std::cerr << "loom-ctld: " << st.message() << std::endl;
    }
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
