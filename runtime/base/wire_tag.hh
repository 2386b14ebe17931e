// SPDX-License-Identifier: Apache-2.0
// The 64-bit tag every message carries, so that messages of different communicators, calls
// and steps never meet the wrong receive. The one definition: the engine builds tags from
// it, the algorithms space their channels by it, the drivers apply its mismatch rule and
// control bit, and a split numbers its children by its communicator-id wrap.
//
//   bit 63      control: an unsolicited notice, never matched against receives
//   bit 62      point-to-point (seq counts calls per pair, not per communicator)
//   bits 52..61 communicator id (10 bits; ids wrap modulo 1024)
//   bits 32..51 call sequence number (20 bits; only calls in flight at once must differ)
//   bits 20..31 the step's schedule tag, compacted: channel (6 bits) and tag (6 bits)
//   bits  0..19 k: the k-th message of that (source, destination, tag) in the call
//
// Bits 32..62 name the call. A driver that finds a message and a receive of one peer and
// one call with different immediates reports a mismatch (same_call_other_imm), so the
// sequence field is never zero: engine traffic always has call bits, and raw use of a
// driver (tags below 2^32) is exempt from the rule.
#pragma once

#include <cstdint>

namespace loom::wire {

// Field widths and positions, from the top bit down.
constexpr int k_bits = 20, tag_bits = 6, channel_bits = 6, seq_bits = 20, comm_bits = 10;
constexpr int k_shift = 0, tag_shift = k_bits, channel_shift = tag_shift + tag_bits;
constexpr int seq_shift = channel_shift + channel_bits, comm_shift = seq_shift + seq_bits;
constexpr int p2p_shift = comm_shift + comm_bits, control_shift = p2p_shift + 1;
static_assert(control_shift == 63, "the fields fill the 64 bits exactly");
static_assert(seq_shift == 32, "the call bits are the upper word (drivers match on them)");

constexpr uint64_t field_mask(int bits, int shift) {
    return ((uint64_t{1} << bits) - 1) << shift;
}
constexpr uint64_t control_tag_bit = uint64_t{1} << control_shift;
constexpr uint64_t p2p_bit         = uint64_t{1} << p2p_shift;
constexpr uint64_t comm_mask       = field_mask(comm_bits, comm_shift);
constexpr uint64_t seq_mask        = field_mask(seq_bits, seq_shift);
constexpr uint64_t step_mask       = field_mask(channel_bits + tag_bits + k_bits, k_shift);

/// The bits of a tag that name the call (communicator, sequence number, p2p).
constexpr uint64_t call_tag_mask = p2p_bit | comm_mask | seq_mask;
static_assert(call_tag_mask == 0x7fffffff00000000ull);
static_assert((call_tag_mask & step_mask) == 0 &&
              (call_tag_mask | step_mask | control_tag_bit) == ~uint64_t{0});

/// Communicator ids: a split's child takes an id from its parent's; ids wrap at this count
/// (two communicators whose ids collide modulo it must not have calls in flight with equal
/// sequence numbers between the same ranks; each has its own endpoint, so they never share
/// a driver's matching anyway).
constexpr uint32_t comm_id_count = uint32_t{1} << comm_bits;
constexpr uint16_t wrap_comm_id(uint64_t id) {
    return static_cast<uint16_t>(id % comm_id_count);
}

/// The schedule tag of channel c's step tag t is c · channel_stride + t (algorithms'
/// channels); only the first max_channel_tag tags of the first max_channels channels fit.
constexpr uint32_t channel_stride  = uint32_t{1} << 20;
constexpr uint32_t max_channel_tag = uint32_t{1} << tag_bits;
constexpr uint32_t max_channels    = uint32_t{1} << channel_bits;
static_assert(max_channel_tag <= channel_stride);

/// The cookie of an unsolicited control completion (drivers never hand it to a post).
constexpr uint64_t control_cookie = ~uint64_t{0};

/// True when two (tag, imm) pairs prove mismatched calls: the same call bits (not all
/// zero) and different immediates. Whichever arrives second completes the receive with
/// LOOM_ERR_MISMATCH.
constexpr bool same_call_other_imm(uint64_t tag_a, uint64_t imm_a, uint64_t tag_b, uint64_t imm_b) {
    return (tag_a & call_tag_mask) != 0 && (tag_a & call_tag_mask) == (tag_b & call_tag_mask) &&
           imm_a != imm_b;
}

/// The per-call part: communicator, sequence number, p2p flag. The sequence field is
/// seq mod (2^20 - 1), plus one: never zero.
constexpr uint64_t call_bits(uint16_t comm, uint32_t seq, bool p2p) {
    const uint64_t field = seq % ((uint32_t{1} << seq_bits) - 1) + 1;
    return (p2p ? p2p_bit : 0) | uint64_t{wrap_comm_id(comm)} << comm_shift | field << seq_shift;
}
/// The per-step part; false when the schedule's tag or k does not fit.
constexpr bool message_bits(uint32_t schedule_tag, uint32_t k, uint32_t* out) {
    const uint32_t channel = schedule_tag / channel_stride, tag = schedule_tag % channel_stride;
    if (channel >= max_channels || tag >= max_channel_tag || k >= (uint32_t{1} << k_bits)) {
        return false;
    }
    *out = (channel << channel_shift) | (tag << tag_shift) | k;
    return true;
}

/// What a control message (bit 63) says, in its low 32 bits (the call bits name the call).
enum class control_kind : uint32_t {
    notice = 0,  // the call failed (imm: code, reporter, culprit)
    hello  = 1,  // a sender-only peer's call signature (imm), sent when its call starts
    ack    = 2,  // the receiver's call completed with this signature (imm)
    query  = 3,  // a timed-out rank asks where the receiver is
    answer = 4,  // imm: where this rank is with the queried call (call_position)
};
constexpr control_kind control_kind_of(uint64_t tag) {
    return static_cast<control_kind>(static_cast<uint32_t>(tag));
}
/// The answer to a query: the call has not started here, is in progress, or is behind.
enum class call_position : uint64_t { not_started = 0, in_progress = 1, behind = 2 };

constexpr uint32_t seq_of(uint64_t tag) {
    return static_cast<uint32_t>((tag & seq_mask) >> seq_shift);
}
constexpr uint16_t comm_of(uint64_t tag) {
    return static_cast<uint16_t>((tag & comm_mask) >> comm_shift);
}
constexpr bool is_p2p(uint64_t tag) {
    return (tag & p2p_bit) != 0;
}

}  // namespace loom::wire
