// SPDX-License-Identifier: Apache-2.0
// The node's flat segment on a communicator (flat_segment.hh, flat_offload.hh): set up when
// the communicator is created, where every rank shares one node over shm, and agreed by all
// ranks, so the flat algorithms apply on every rank or on none (as comm_inc.cc does for an
// aggregation node).
//
// Set-up through the job's store: rank 0 creates the segment and publishes its name under
// <job>/flat/<comm id> (or "!" and why it could not); the others map it, mark themselves in
// it and publish <…>/attached/<rank> ("1" or "!why"); rank 0 waits for all of them and
// unlinks the name, so nothing is left in /dev/shm once the communicator is up, whatever
// happens to it later. Then one all-reduce (minimum) tells everyone whether all have it.
#include "base/check.hh"
#include "base/log.hh"
#include "comm/comm.hh"

namespace loom::comm {
namespace {

std::string flat_key(const settings& s) {
    return s.job + "/flat/" + std::to_string(s.comm_id);
}

}  // namespace

void communicator::open_flat() {
    const settings& s = settings_;
    if (!s.flat) {
        flat_reason_ = "the flat segment is off (LOOM_FLAT=0)";
        return;
    }
    if (s.transport != "shm") {
        flat_reason_ = "the flat segment needs every rank on one node over shm (transport " +
                       s.transport + ")";
        return;
    }
    const std::string key    = flat_key(s);
    const auto max_bytes     = size_t(s.flat_max_bytes);
    result<flat_segment> seg = status(LOOM_ERR_INTERNAL, "");
    if (rank() == 0) {
        seg = flat_segment::create(flat_segment::name_for(s.job, s.comm_id), size(), max_bytes);
        status st = store_->set(key, seg ? seg->name() : "!" + seg.error().message());
        if (!st) {
            flat_reason_ = st.message();
            return;
        }
    } else {
        auto name = store_->get(key, s.join_timeout_s);
        if (!name) {
            flat_reason_ = "rank 0 did not publish the flat segment: " + name.error().message();
            return;
        }
        if (name->starts_with("!")) {
            flat_reason_ = "rank 0 could not create the flat segment: " + name->substr(1);
            return;
        }
        seg = flat_segment::attach(*name, size(), max_bytes);
        (void)store_->set(key + "/attached/" + std::to_string(rank()),
                          seg ? "1" : "!" + seg.error().message());
    }
    if (!seg) {
        flat_reason_ = "rank " + std::to_string(rank()) + ": " + seg.error().message();
        return;
    }
    flat_ = std::make_unique<flat_offload>(std::move(seg).value(), rank(), max_bytes);
    flat_->announce();
    if (rank() == 0) {
        std::vector<std::string> keys;
        for (int r = 1; r < size(); ++r) {
            keys.push_back(key + "/attached/" + std::to_string(r));
        }
        // Whatever the others answered (or if they never do), the name goes now: a rank that
        // failed to map it will vote against the flat path in agree_flat.
        (void)store_->wait(keys, s.join_timeout_s);
        flat_->segment().unlink();
    }
}

status communicator::agree_flat() {
    if (!settings_.flat || settings_.transport != "shm") {
        return status::ok();
    }
    LOOM_ASSIGN(flat_ready_, all_ranks_agree(flat_ != nullptr, "the flat segment"));
    if (flat_ready_) {
        LOOM_LOG_INFO(log::subsystem::init, "rank %d: flat segment up (calls up to %lld bytes)",
                      rank(), static_cast<long long>(settings_.flat_max_bytes));
        return status::ok();
    }
    if (flat_reason_.empty()) {
        flat_reason_ = "another rank could not map the flat segment";
    }
    LOOM_LOG_WARN(log::subsystem::init, "rank %d: flat segment off: %s", rank(),
                  flat_reason_.c_str());
    return status::ok();
}

}  // namespace loom::comm
