// SPDX-License-Identifier: Apache-2.0
// Loading and checking a user's schedule for a communicator (user_schedule.hh).
#include "comm/user_schedule.hh"

#include <algorithm>

#include "base/check.hh"
#include "base/hash.hh"
#include "comm/comm.hh"
#include "schedule/verifier.hh"

namespace loom::comm {
namespace {

static_assert(static_cast<int>(schedule::collective::sendrecv) == LOOM_SENDRECV &&
                  static_cast<int>(schedule::collective::broadcast) == LOOM_BROADCAST &&
                  schedule::collective_count == LOOM_COLLECTIVE_COUNT,
              "loom_collective_t numbers the schedule's collectives");

std::string collective_text(int coll) {
    if (coll < 0 || coll >= LOOM_COLLECTIVE_COUNT) {
        return "collective " + std::to_string(coll);
    }
    return std::string(schedule::collective_name(static_cast<schedule::collective>(coll)));
}

bool has_in_network_steps(const schedule::rank_schedule& rs) {
    return std::any_of(rs.steps.begin(), rs.steps.end(), [](const schedule::step& s) {
        return s.kind == schedule::step_kind::inc_push || s.kind == schedule::step_kind::inc_pull;
    });
}

// The buffers a run needs on this rank: a NULL one is an error only where the schedule
// reads or writes it (a broadcast's non-root input, an empty block).
status check_buffers(const schedule_call& call, const engine::plan& p, const std::string& who) {
    if (p.input_bytes > 0 && call.sendbuf == nullptr) {
        return invalid_argument(who + ": sendbuf is NULL and this rank's schedule reads " +
                                std::to_string(p.input_bytes) + " bytes of it");
    }
    if (p.output_bytes > 0 && call.recvbuf == nullptr) {
        return invalid_argument(who + ": recvbuf is NULL and this rank's schedule writes " +
                                std::to_string(p.output_bytes) + " bytes of it");
    }
    return status::ok();
}

}  // namespace

result<std::unique_ptr<user_schedule>> user_schedule::load(communicator& comm,
                                                           std::string_view text,
                                                           std::string origin) {
    auto parsed = schedule::parse_any(text);
    if (!parsed) {
        return status(parsed.error()).prefix(origin + ": ");
    }
    schedule::schedule& s = *parsed;
    if (s.info.nranks != comm.size()) {
        return invalid_argument(origin + ": the schedule is written for " +
                                std::to_string(s.info.nranks) + " ranks; the communicator has " +
                                std::to_string(comm.size()));
    }
    schedule::verify_report report = schedule::verify(s);
    if (!report.result) {
        return status(LOOM_ERR_VERIFY, origin + ": " + report.result.message());
    }
    auto out     = std::unique_ptr<user_schedule>(new user_schedule());
    out->comm_   = &comm;
    out->info_   = s.info;
    out->origin_ = std::move(origin);
    // Hashed in its canonical form, so the same schedule written as text or as JSON (or with
    // other spacing) runs as the same call on every rank.
    out->text_hash_            = fnv1a64(schedule::to_text(s));
    out->acks_when_steps_done_ = engine::one_way_roles_cycle(s);
    out->mine_                 = std::move(s.ranks[static_cast<size_t>(comm.rank())]);
    if (has_in_network_steps(out->mine_) && !comm.in_network()) {
        return not_supported(out->origin_ +
                             ": the schedule has inc_push/inc_pull steps and no aggregation "
                             "node admitted this communicator (LOOM_SWITCH)");
    }
    return out;
}

int64_t user_schedule::input_count() const {
    return schedule::input_count(info_, comm_->rank());
}

int64_t user_schedule::output_count() const {
    return schedule::output_count(info_, comm_->rank());
}

result<std::shared_ptr<const engine::plan>> user_schedule::plan_for(const schedule_call& call) {
    const std::string who =
        "loom_schedule_run: " + origin_ + " on rank " + std::to_string(comm_->rank());
    if (call.coll != static_cast<int>(info_.coll)) {
        return invalid_argument(who + ": the call asks for " + collective_text(call.coll) +
                                ", the schedule computes " + collective_text(int(info_.coll)));
    }
    if (call.dtype < 0 || call.dtype >= LOOM_DTYPE_COUNT) {
        return invalid_argument(who + ": unknown dtype " + std::to_string(call.dtype));
    }
    if (call.op < 0 || call.op >= LOOM_OP_COUNT) {
        return invalid_argument(who + ": unknown op " + std::to_string(call.op));
    }
    // Fixed count (docs/schedules.md#running-a-user-schedule): the regions are offsets and
    // lengths in elements of this one count; any other count would need another schedule.
    if (call.count != static_cast<uint64_t>(info_.count)) {
        return invalid_argument(who + ": count " + std::to_string(call.count) +
                                " does not match the schedule's count " +
                                std::to_string(info_.count) +
                                " (a schedule runs at the count it is written for)");
    }
    const bool reduces = info_.coll == schedule::collective::reduce ||
                         info_.coll == schedule::collective::allreduce ||
                         info_.coll == schedule::collective::reduce_scatter;
    const int op = reduces ? call.op : LOOM_SUM;
    auto& slot = plans_[static_cast<size_t>(call.dtype) * LOOM_OP_COUNT + static_cast<size_t>(op)];
    if (!slot) {
        uint64_t sig = splitmix64(text_hash_ ^ 0x5573657253636864ULL);  // "UserSchd"
        for (uint64_t v : {static_cast<uint64_t>(info_.count), static_cast<uint64_t>(call.dtype),
                           static_cast<uint64_t>(op)}) {
            sig = splitmix64(sig ^ v);
        }
        auto p = engine::compile(info_, mine_, static_cast<loom_dtype_t>(call.dtype), sig,
                                 acks_when_steps_done_);
        if (!p) {
            return status(p.error()).prefix(who + ": ");
        }
        slot = std::move(p).value();
    }
    LOOM_CHECK(check_buffers(call, *slot, who));
    return slot;
}

}  // namespace loom::comm
