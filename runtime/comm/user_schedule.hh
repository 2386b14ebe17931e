// SPDX-License-Identifier: Apache-2.0
// A schedule a user wrote (text or JSON, docs/schedules.md), loaded for one communicator and
// run by the engine on real buffers: the object behind loom_schedule_t.
//
// Loading checks everything that does not depend on the buffers, once, on every rank alike
// (each rank parses and verifies the whole file, so they all reach the same verdict without
// a message): the file parses, the verifier proves it (LOOM_ERR_VERIFY with the verifier's
// message otherwise), it is written for the communicator's N, and its in-network steps have
// an aggregation node. Running checks the call against the file: the collective the caller
// names, the count (a schedule is written for one count, its regions in elements: it runs
// at that count, for any element type), buffers and dtype/op; nothing is sent when a check
// fails. Each (dtype, op) compiles to a plan once, kept with the schedule.
//
// The wire signature of a run hashes the schedule's own text with the count, dtype and op,
// so ranks that loaded different schedules (or ran one at another dtype) fail with
// LOOM_ERR_MISMATCH as any disagreeing collective does, before any data lands.
#pragma once

#include <loom/loom.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.hh"
#include "engine/plan.hh"
#include "schedule/schedule.hh"

namespace loom::comm {

class communicator;

/// A run of a user schedule as the C API received it (enum values as the integers C passed).
struct schedule_call {
    int coll            = LOOM_ALLREDUCE;
    const void* sendbuf = nullptr;
    void* recvbuf       = nullptr;
    size_t count        = 0;
    int dtype           = LOOM_FLOAT32;
    int op              = LOOM_SUM;
    double timeout_s    = -1;  // < 0: the communicator's
};

class user_schedule {
  public:
    /// Parses `text` (text or JSON form; `origin` names it in messages: the file's path, or
    /// "schedule text"), verifies it and checks it against `comm`.
    static result<std::unique_ptr<user_schedule>> load(communicator& comm, std::string_view text,
                                                       std::string origin);

    communicator& comm() const { return *comm_; }
    const schedule::schedule_info& info() const { return info_; }
    /// This rank's buffers in elements, and its scratch.
    int64_t input_count() const;
    int64_t output_count() const;
    int64_t scratch_count() const { return mine_.scratch_count; }
    const std::string& origin() const { return origin_; }

    /// Checks a run against the schedule (collective, count, dtype, op, buffers, timeout)
    /// and returns its plan, compiled on first use.
    result<std::shared_ptr<const engine::plan>> plan_for(const schedule_call& call);

  private:
    user_schedule() = default;

    communicator* comm_ = nullptr;
    schedule::schedule_info info_;
    schedule::rank_schedule mine_;       // this rank's steps; the others were only verified
    bool acks_when_steps_done_ = false;  // its one-way roles form a cycle (engine.hh)
    uint64_t text_hash_        = 0;      // of the schedule's canonical text form
    std::string origin_;
    std::array<std::shared_ptr<const engine::plan>, size_t{LOOM_DTYPE_COUNT} * LOOM_OP_COUNT>
        plans_{};
};

}  // namespace loom::comm
