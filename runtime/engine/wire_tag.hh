// The 64-bit tag every message carries, so that messages of different communicators, calls
// and steps never meet the wrong receive.
//
//   bit 63      control (drivers::control_tag_bit): an unsolicited notice, never matched
//   bit 62      point-to-point (seq counts calls per pair, not per communicator)
//   bits 52..61 communicator id (10 bits)
//   bits 32..51 call sequence number (20 bits; only calls in flight at once must differ)
//   bits 20..31 the step's schedule tag, compacted: channel (6 bits) and tag (6 bits)
//   bits  0..19 k: the k-th message of that (source, destination, tag) in the call
#pragma once

#include <cstdint>

namespace loom::engine::wire {

constexpr int comm_bits = 10, seq_bits = 20, tag_bits = 12, k_bits = 20;
constexpr uint64_t p2p_bit         = uint64_t{1} << 62;
constexpr uint32_t channel_stride  = 1u << 20;  // algorithms' registry.cc channel_tag_stride
constexpr uint32_t max_channel_tag = 1u << 6;   // per-channel schedule tags that fit

/// The per-call part: communicator, sequence number, p2p flag. The sequence field is never
/// zero (seq mod (2^20 - 1), plus one), so the call bits are never all zero and the drivers'
/// mismatch rule (driver.hh call_tag_mask) always applies to engine traffic.
inline uint64_t call_bits(uint16_t comm, uint32_t seq, bool p2p) {
    uint64_t field = seq % ((1u << seq_bits) - 1) + 1;
    return (p2p ? p2p_bit : 0) | (uint64_t{comm} & ((1u << comm_bits) - 1)) << 52 | field << 32;
}
/// The per-step part; false when the schedule's tag or k does not fit.
inline bool message_bits(uint32_t schedule_tag, uint32_t k, uint32_t* out) {
    uint32_t channel = schedule_tag / channel_stride, tag = schedule_tag % channel_stride;
    if (channel >= 64 || tag >= max_channel_tag || k >= (1u << k_bits)) {
        return false;
    }
    *out = (channel << 26) | (tag << 20) | k;
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
inline control_kind control_kind_of(uint64_t tag) {
    return static_cast<control_kind>(static_cast<uint32_t>(tag));
}
/// The answer to a query: the call has not started here, is in progress, or is behind.
enum class call_position : uint64_t { not_started = 0, in_progress = 1, behind = 2 };

inline uint32_t seq_of(uint64_t tag) {
    return static_cast<uint32_t>(tag >> 32) & ((1u << seq_bits) - 1);
}
inline uint16_t comm_of(uint64_t tag) {
    return static_cast<uint16_t>((tag >> 52) & ((1u << comm_bits) - 1));
}
inline bool is_p2p(uint64_t tag) {
    return (tag & p2p_bit) != 0;
}

}  // namespace loom::engine::wire
