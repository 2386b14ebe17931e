// SPDX-License-Identifier: Apache-2.0
// The poll-mode engine (docs/architecture.md#poll-mode): runs a rank's schedule against a
// driver's fast path.
//
// A schedule is compiled once into a plan (steps with resolved byte offsets, dependency
// counts, dependents in CSR form, wire tags, staging needs). Starting a plan on buffers takes
// a request from a pool sized at engine creation; progress() polls the driver, reduces what
// arrived, and posts the steps whose dependencies are done. No allocation, lock or system
// call per step: everything a step needs was sized when the plan was compiled.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.hh"
#include "drivers/driver.hh"
#include "engine/offload.hh"
#include "kernels/reduce.hh"
#include "schedule/schedule.hh"

namespace loom::engine {

// The reduction kernels (runtime/kernels) the engine runs, by their short names.
using kernels::finish_average;
using kernels::reduce_fn;
using kernels::reduce_kernel;

/// What a call needs besides its schedule.
struct call_buffers {
    const void* input  = nullptr;
    void* output       = nullptr;
    loom_dtype_t dtype = LOOM_FLOAT32;
    loom_op_t op       = LOOM_SUM;
};

class plan;  // compiled schedule (engine/plan.hh)

/// Compiles one rank's steps for elements of `dtype`. `signature` identifies the call (the
/// comm layer hashes primitive, count, dtype, op, root, algorithm); it travels with every
/// message so mismatched calls across ranks are detected before any data lands. Fails
/// (invalid argument) when a tag or message count does not fit the wire format.
/// `acks_when_steps_done`: for a schedule whose one-way roles form a cycle
/// (one_way_roles_cycle), acknowledge as soon as this rank's steps are done.
result<std::shared_ptr<const plan>> compile(const schedule::schedule_info& info,
                                            const schedule::rank_schedule& steps,
                                            loom_dtype_t dtype, uint64_t signature,
                                            bool acks_when_steps_done = false);

/// True when the ranks that only send to a peer (and wait for its acknowledgement, plan.hh)
/// form a cycle: 0 waits for 1, 1 for 2, 2 for 0. Acknowledging only on completion, as
/// loom does to make a mismatch anywhere downstream fail the ranks upstream, would then
/// deadlock; such a schedule runs with acknowledgements sent when each rank's steps are done.
/// The catalogue's schedules have no such cycle (engine_acks checks them).
bool one_way_roles_cycle(const schedule::schedule& s);

enum class progress_mode { caller, thread };

struct engine_config {
    int rank               = 0;
    int size               = 1;
    uint16_t comm_id       = 0;   // goes into every wire tag
    double timeout_s       = 30;  // default deadline of a call
    int max_requests       = 16;  // collectives in flight at once
    progress_mode progress = progress_mode::caller;
    offload* in_network    = nullptr;  // runs inc_push/inc_pull steps; null: none here
    // Runs the inc_push/inc_pull steps of plans whose info says node_local (the flat
    // segment, comm/flat_offload.hh); null: none here.
    offload* node_local = nullptr;
};

/// Why a request failed: the rank, peer, collective, sequence number and step.
struct failure {
    loom_status_t code = LOOM_SUCCESS;
    int rank = -1, peer = -1;
    uint32_t seq = 0;
    int step     = -1;
    std::string collective;
    std::string message;  // one line naming all of the above
};

/// Bytes and messages of the steps this engine completed since it was created: sends and
/// receives handed to the driver, pushes to and pulls from the aggregation node.
struct traffic_counters {
    uint64_t sent_bytes = 0, recv_bytes = 0, sent_msgs = 0, recv_msgs = 0;
    uint64_t switch_sent_bytes = 0, switch_recv_bytes = 0;
};

class request;

class engine {
  public:
    static result<std::unique_ptr<engine>> create(const engine_config& config,
                                                  drivers::endpoint& endpoint);
    virtual ~engine() = default;

    /// Starts a plan on buffers; the returned request is owned by the engine until released.
    /// `seq` numbers the call on its communicator (collectives: the same on every rank, so
    /// several calls in flight match by it; point-to-point: the comm layer's per-pair count
    /// with p2p = true). `timeout_s` < 0 uses the configured default. The input may alias
    /// the output (in-place); the engine then copies the input aside first.
    virtual result<request*> start(std::shared_ptr<const plan> p, const call_buffers& buffers,
                                   uint32_t seq, bool p2p, double timeout_s) = 0;
    /// One pass of progress (caller mode); returns true if anything happened.
    virtual bool progress() = 0;
    /// LOOM_IN_PROGRESS, LOOM_SUCCESS, or the failure's code.
    virtual loom_status_t test(request* r) = 0;
    /// Progresses until r completes or `timeout_s` passes (then r fails with a diagnostic).
    virtual loom_status_t wait(request* r, double timeout_s)  = 0;
    virtual const failure& failure_of(const request* r) const = 0;
    /// Returns the request to the pool (after completion).
    virtual void release(request* r) = 0;
    /// Fails every request in flight with `code` (abort, or a peer known dead); returns promptly.
    virtual void abort(loom_status_t code, const std::string& why) = 0;
    /// A snapshot of the traffic counters (exact when no call is in flight).
    virtual traffic_counters traffic() const = 0;
};

}  // namespace loom::engine
