// SPDX-License-Identifier: Apache-2.0
// The two halves of one peer's sliding window, pure bookkeeping with no link and no clock, so
// acks, holes, duplicates and sequence wrap-around are tested on their own
// (tests/drivers_reliable/test_reliable_window.cc).
//
// send_window: the frames sent and not yet acknowledged, in a ring of slots indexed by
// sequence number. A cumulative ack frees every slot before it; a SACK bit marks a frame the
// receiver holds out of order (never retransmitted on a timer), and a frame that three later
// frames have overtaken is a hole, retransmitted at once (fast retransmit, once per hole).
//
// recv_window: the next sequence number expected and the frames that came ahead of it, kept
// whole (at most `window` frames of one link MTU) until the gap before them is filled. The
// endpoint processes frames strictly in sequence order, so messages, rendezvous requests and
// their data are seen in the order they were sent, whatever the link did to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "drivers/reliable/reliable_wheel.hh"
#include "drivers/reliable/reliable_wire.hh"

namespace loom::drivers::reliable {

/// Frames three later frames overtook are holes (fast retransmit).
constexpr uint32_t hole_threshold = 3;
/// Frames after the cumulative ack that one SACK bitmap reports.
constexpr uint32_t sack_bits = 64;

/// A frame in flight: enough to send it again (its header, and where its body lives).
struct tx_slot : timer_node {
    uint32_t seq      = 0;
    bool used         = false;
    bool sacked       = false;
    bool fast_done    = false;  // fast-retransmitted since its last timer
    bool probe        = false;  // its timer is a tail-loss probe (earlier than the timeout)
    uint8_t tries     = 0;      // retransmissions so far (the timeout doubles each time)
    int peer          = -1;
    void* owner       = nullptr;  // the send operation whose bytes the body is (data frames)
    uint64_t offset   = 0;        // of the body in the owner's buffer
    uint32_t blen     = 0;
    uint32_t body_crc = 0;
    double sent_at    = 0;  // first transmission (round-trip samples: never-retransmitted only)
    uint8_t head[header_bytes]{};
};

class send_window {
  public:
    void init(size_t window, uint32_t first_seq);
    bool full() const { return next_ - base_ >= slots_.size(); }
    bool empty() const { return next_ == base_; }
    size_t in_flight() const { return next_ - base_; }
    uint32_t base() const { return base_; }
    uint32_t next() const { return next_; }
    size_t capacity() const { return slots_.size(); }

    /// The slot of the next sequence number, now in flight (call only when !full()).
    tx_slot* push();
    /// The slot of `seq` while it is in flight, else null.
    tx_slot* at(uint32_t seq);

    /// Applies an acknowledgement: every slot before `cum` goes to released(slot) (then is
    /// free), SACK bits mark slots held by the receiver, and each hole three frames overtook
    /// goes once to hole(slot). False (nothing changed) when `cum` acknowledges frames never
    /// sent: a corrupt or forged ack.
    template <class R, class H>
    bool apply_ack(uint32_t cum, uint64_t sack, R&& released, H&& hole) {
        if (seq_before(next_, cum)) {
            return false;
        }
        while (seq_before(base_, cum)) {
            tx_slot* s = &slots_[base_ & mask_];
            released(s);
            s->used  = false;
            s->owner = nullptr;
            ++base_;
        }
        uint32_t highest = cum;
        bool any         = false;
        for (uint32_t i = 0; i < sack_bits && sack != 0; ++i, sack >>= 1) {
            uint32_t seq = cum + 1 + i;
            if (!seq_before(seq, next_)) {
                break;
            }
            if ((sack & 1) != 0) {
                slots_[seq & mask_].sacked = true;
                highest                    = seq;
                any                        = true;
            }
        }
        if (any) {
            for (uint32_t seq = cum; seq_before(seq, highest); ++seq) {
                tx_slot* s = &slots_[seq & mask_];
                if (!s->sacked && !s->fast_done && highest - seq >= hole_threshold) {
                    s->fast_done = true;
                    hole(s);
                }
            }
        }
        return true;
    }

  private:
    std::vector<tx_slot> slots_;
    uint32_t mask_ = 0;
    uint32_t base_ = 0;  // oldest unacknowledged
    uint32_t next_ = 0;  // next to send
};

class recv_window {
  public:
    enum class verdict { next, ahead, duplicate, beyond };

    /// Room for `window` frames of up to `frame_bytes` each.
    void init(size_t window, size_t frame_bytes);
    /// The peer's first sequence number (from its hello); forgets what was held.
    void start(uint32_t first_seq);
    bool started() const { return started_; }
    uint32_t expected() const { return expected_; }

    /// Where `seq` falls: the one expected, ahead within the window (not yet held), already
    /// seen (before expected, or held), or beyond the window.
    verdict classify(uint32_t seq) const;
    /// Keeps a copy of frame `seq` (next or ahead) until its turn.
    void store(uint32_t seq, const uint8_t* data, size_t len);
    /// The expected frame, if it is held.
    bool peek(const uint8_t** data, size_t* len) const;
    /// The expected frame was processed: expect the next one.
    void advance();
    /// Bit i: frame expected + 1 + i is held.
    uint64_t sack() const;
    size_t held() const { return held_; }

  private:
    std::vector<uint8_t> bytes_;
    std::vector<uint32_t> len_;
    std::vector<uint8_t> present_;
    size_t frame_bytes_ = 0;
    uint32_t mask_      = 0;
    uint32_t expected_  = 0;
    size_t held_        = 0;
    bool started_       = false;
};

}  // namespace loom::drivers::reliable
