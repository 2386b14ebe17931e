// SPDX-License-Identifier: Apache-2.0
// In-network steps (inc_push / inc_pull) leave the engine through an offload that the
// communicator provides (runtime/comm over inc/client and a link to loom-switch), so the
// engine knows nothing of packets, slots or switches. The engine posts each in-network step
// as it becomes ready and polls the offload beside the driver in the same loop; completions
// carry the engine's cookies, exactly like a driver's.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <string>

#include "drivers/waker.hh"
#include "schedule/collective.hh"

namespace loom::engine {

/// One in-network step of a call.
struct offload_op {
    uint64_t cookie    = 0;     // completes with this cookie
    uint32_t seq       = 0;     // the call's sequence number on its communicator
    uint32_t slot      = 0;     // the step's tag: the segment (algorithms/inc.cc)
    bool push          = true;  // contribute `data` (inc_push) or receive into `data` (inc_pull)
    void* data         = nullptr;
    uint64_t first     = 0;  // the segment's first element in the call's vector
    uint64_t count     = 0;  // its elements
    loom_dtype_t dtype = LOOM_FLOAT32;
    loom_op_t op       = LOOM_SUM;  // LOOM_AVG arrives as LOOM_SUM (the engine divides)
    schedule::collective coll = schedule::collective::allreduce;
    int root                  = 0;
    double deadline_s         = 0;  // base/clock.hh now_s() time
    uint64_t signature        = 0;  // the call's (engine.hh compile): a node-local offload
                                    // compares it across ranks, as messages do
};

struct offload_completion {
    uint64_t cookie      = 0;
    loom_status_t status = LOOM_SUCCESS;
};

class offload {
  public:
    virtual ~offload() = default;
    /// Takes a step (never blocks or allocates). LOOM_ERR_NO_RESOURCE: busy, post it again
    /// later; any other error fails the call.
    virtual loom_status_t post(const offload_op& op) = 0;
    /// Makes progress; returns up to `max` completions.
    virtual int poll(offload_completion* out, int max) = 0;
    /// Withdraws a posted step of a call that failed; the offload never touches its buffer
    /// again. False when it is not pending.
    virtual bool cancel(uint64_t cookie) = 0;
    /// True while a posted step has not completed. The default (always) is safe: it only
    /// keeps an idle engine from sleeping on its driver alone.
    virtual bool pending() const { return true; }
    /// How an idle engine sleeps until the offload has work (drivers/waker.hh); null (the
    /// default): nothing can wake it, and the engine naps while a step is pending.
    virtual drivers::waker idle_waker() { return {}; }
    /// One line on the last failure (which node, what was missing), for the call's message.
    virtual std::string last_failure() const = 0;
    /// The rank the last failure blames (a dead or mismatched peer), else -1: the failure's
    /// peer, which the engine's notice to the other ranks names too.
    virtual int failed_peer() const { return -1; }
    /// The rank whose part a posted step waits for now, where the offload knows it (the
    /// node-local one), else -1: the culprit of a timeout.
    virtual int awaited_peer() const { return -1; }
};

}  // namespace loom::engine
