// SPDX-License-Identifier: Apache-2.0
// A compiled schedule: one rank's steps with byte offsets, wire tags and dependency
// counts resolved, so running it needs no lookup, allocation or parsing per step.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/engine.hh"
#include "schedule/schedule.hh"

namespace loom::engine {

/// Where a step's bytes are: a buffer and a byte offset.
/// input_aside: input bytes an in-place call set aside before its output overwrote them
/// (in_place.hh); outside such a call it is the input itself.
enum class buffer : uint8_t { none, input, output, scratch, staging, input_aside };

struct plan_step {
    schedule::step_kind kind;
    buffer dst_buf, src_buf, aux_buf;
    int32_t peer;
    uint32_t message;       // wire::message_bits
    int64_t bytes;          // length of the region(s)
    int64_t count;          // elements (reductions)
    int64_t dst, src, aux;  // byte offsets in their buffers
    int64_t staging;        // recv_reduce: byte offset of its landing area in staging
    uint32_t ndeps;
    uint32_t dependents_begin, dependents_end;  // into plan::dependents
};

class plan {
  public:
    schedule::schedule_info info;
    loom_dtype_t dtype    = LOOM_FLOAT32;
    size_t element_bytes  = 4;
    uint64_t signature    = 0;
    int rank              = 0;
    int64_t input_bytes   = 0;
    int64_t output_bytes  = 0;
    int64_t scratch_bytes = 0;
    int64_t staging_bytes = 0;  // landing areas of recv_reduce steps
    std::vector<plan_step> steps;
    std::vector<uint32_t> dependents;
    std::vector<uint32_t> roots;  // steps with no dependency
    /// Completion acknowledgements (broadcast, reduce, send/recv, where a rank's completion
    /// does not depend on everything its messages caused): the peers this rank sends to and
    /// never hears from in the call, whose ack it waits for (and to whom it says hello with
    /// its signature when it starts), and the peers it hears from and never sends to, which
    /// it acks when it completes.
    std::vector<int32_t> ack_from, ack_to;
    /// Acknowledge when this rank's steps are done rather than when the call completes
    /// (one_way_roles_cycle in engine.hh).
    bool acks_when_steps_done = false;
    /// Output elements that hold a reduction (LOOM_AVG divides them at the end): bytes.
    int64_t reduced_output_bytes = 0;
    /// In place with the input `in_place_shift` bytes into the output (loom.h's convention:
    /// 0, or this rank's block for all-gather): only `in_place_aside` (input byte ranges,
    /// sorted, disjoint) is copied aside before the call starts, and the steps that read it
    /// read buffer::input_aside (in_place.hh). Not analysed, or another overlap: the whole
    /// input is copied aside.
    bool in_place_analysed = false;
    int64_t in_place_shift = 0;
    std::vector<std::pair<int64_t, int64_t>> in_place_aside;
};

}  // namespace loom::engine
