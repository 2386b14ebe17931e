// SPDX-License-Identifier: Apache-2.0
// A call in flight: its plan, its buffers and the progress of each step. Requests live in a
// pool sized at engine creation; their vectors keep their capacity from call to call, so a
// steady stream of calls allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "engine/engine.hh"
#include "engine/plan.hh"

namespace loom::engine {

enum class step_state : uint8_t { waiting, posted, done };

class request {
  public:
    std::shared_ptr<const plan> p;
    call_buffers buffers;
    const std::byte* input       = nullptr;
    const std::byte* input_aside = nullptr;  // buffer::input_aside (plan.hh)
    std::byte* output            = nullptr;
    std::vector<std::byte> scratch, staging, input_copy;
    std::vector<uint32_t> waiting;  // unfinished dependencies per step
    std::vector<step_state> state;
    std::vector<uint32_t> ready;    // dependencies done, not yet executed
    std::vector<uint32_t> blocked;  // the driver said "no resource": retry after a poll
    size_t done_steps = 0;
    reduce_fn kernel  = nullptr;
    uint64_t call_tag = 0;
    uint32_t seq      = 0;
    bool p2p          = false;
    double deadline_s = 0;
    // A message this call was reading was withdrawn by its sender (driver.hh cancel): the
    // sender's call failed, and its notice with the reason is on its way. Until it comes
    // (or a short grace passes) the call waits for it, to report the root cause.
    int withdrawn_by   = -1;
    int withdrawn_step = -1;
    // Acknowledgements still awaited (plan::ack_from), and from whom one came.
    uint32_t acks_missing = 0;
    std::vector<uint8_t> acked;
    // Past its deadline, the call asks every rank where it is before failing, to name the
    // rank that never arrived (answers: wire::call_position, -1 none yet).
    bool probing         = false;
    double probe_until_s = 0;
    std::vector<int8_t> answers;
    uint16_t slot = 0, generation = 0;
    bool active = false;  // in the pool's hands (started, not released)
    std::atomic<int> status{LOOM_SUCCESS};
    failure why;

    std::byte* at(buffer b, int64_t offset) {
        switch (b) {
            case buffer::input:
                return const_cast<std::byte*>(input) + offset;
            case buffer::input_aside:
                return const_cast<std::byte*>(input_aside) + offset;
            case buffer::output:
                return output + offset;
            case buffer::scratch:
                return scratch.data() + offset;
            case buffer::staging:
                return staging.data() + offset;
            case buffer::none:
                break;
        }
        return nullptr;
    }
    bool in_progress() const { return status.load(std::memory_order_acquire) == LOOM_IN_PROGRESS; }
};

}  // namespace loom::engine
