// The endpoint side of in-network aggregation (client.hh).
#include "inc/client/client.hh"

#include <algorithm>
#include <cstring>
#include <string>

namespace loom::inc {

client::client(const client_config& c) : cfg_(c) {
    slots_.resize(std::max<uint32_t>(1, c.window));
    packet_.resize(header_bytes + max_payload_bytes);
}

status client::start(uint32_t seq, loom_dtype_t dtype, loom_op_t op, const void* in, void* out,
                     size_t count, double now_s) {
    if (running_ && !done()) {
        return invalid_argument("inc client rank " + std::to_string(cfg_.rank) + ": collective " +
                                std::to_string(seq_) + " is still running");
    }
    esize_ = element_bytes(dtype);
    if (esize_ == 0 || (op != LOOM_SUM && op != LOOM_MIN && op != LOOM_MAX)) {
        return invalid_argument("inc: dtype " + std::to_string(int(dtype)) + " / op " +
                                std::to_string(int(op)) +
                                " not carried (int32, int64, float32, float64, bfloat16, "
                                "float16 × sum, min, max)");
    }
    if (cfg_.chunk_elements == 0 || cfg_.chunk_elements * esize_ > max_payload_bytes) {
        return invalid_argument("inc: chunk of " + std::to_string(cfg_.chunk_elements) +
                                " elements exceeds the " + std::to_string(max_payload_bytes) +
                                "-byte payload");
    }
    running_   = true;
    seq_       = seq;
    dtype_     = dtype;
    op_        = op;
    in_        = static_cast<const uint8_t*>(in);
    out_       = static_cast<uint8_t*>(out);
    count_     = count;
    chunks_    = (count + cfg_.chunk_elements - 1) / cfg_.chunk_elements;
    delivered_ = 0;
    deadline_  = now_s + cfg_.deadline_s;
    have_.assign((chunks_ + 63) / 64, 0);
    for (size_t i = 0; i < slots_.size(); ++i) {
        slots_[i]      = slot_state{};
        slots_[i].next = i;
    }
    return status::ok();
}

void client::send_chunk(uint32_t slot, bool resend, double now_s, uplink& up) {
    slot_state& s  = slots_[slot];
    uint64_t first = s.chunk * cfg_.chunk_elements;
    header h;
    h.kind   = packet_kind::contribute;
    h.dtype  = dtype_;
    h.op     = op_;
    h.flags  = uint16_t((cfg_.deterministic ? flag_deterministic : 0) | (resend ? flag_resend : 0) |
                        (s.chunk + 1 == chunks_ ? flag_last_chunk : 0));
    h.job    = cfg_.job;
    h.comm   = cfg_.comm;
    h.seq    = seq_;
    h.slot   = slot;
    h.offset = first;
    h.count  = uint32_t(std::min<uint64_t>(cfg_.chunk_elements, count_ - first));
    h.contributor = cfg_.rank;
    size_t len    = encode(h, in_ + first * esize_, packet_.data());
    up.send(packet_.data(), len);
    s.sent_at = now_s;
    ++(resend ? stats_.retransmitted : stats_.sent);
}

// Sends slot i's next chunk.
void client::dispatch(uint32_t i, double now_s, uplink& up) {
    slot_state& s = slots_[i];
    s.busy        = true;
    s.chunk       = s.next;
    s.next += slots_.size();
    s.rto = cfg_.rto_s;
    send_chunk(i, false, now_s, up);
}

status client::poll(double now_s, uplink& up) {
    if (!running_ || done()) {
        return status::ok();
    }
    for (uint32_t i = 0; i < slots_.size(); ++i) {
        slot_state& s = slots_[i];
        if (!s.busy && s.next < chunks_) {
            dispatch(i, now_s, up);
        } else if (s.busy && now_s - s.sent_at >= s.rto) {
            s.rto = std::min(s.rto * 2, cfg_.max_rto_s);
            send_chunk(i, true, now_s, up);
        }
    }
    if (now_s > deadline_) {
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].busy) {
                return status(LOOM_ERR_TIMEOUT,
                              "inc client rank " + std::to_string(cfg_.rank) + ": collective " +
                                  std::to_string(seq_) + ": no result for chunk " +
                                  std::to_string(slots_[i].chunk) + " (slot " + std::to_string(i) +
                                  ") within " + std::to_string(cfg_.deadline_s) + " s");
            }
        }
    }
    return status::ok();
}

void client::on_packet(const header& h, const uint8_t* payload, double now_s, uplink& up) {
    if (h.kind != packet_kind::result || !running_ || h.job != cfg_.job || h.comm != cfg_.comm ||
        h.seq != seq_ || h.slot >= slots_.size() || h.offset % cfg_.chunk_elements != 0) {
        ++stats_.foreign;
        return;
    }
    uint64_t chunk = h.offset / cfg_.chunk_elements;
    if (chunk >= chunks_ || chunk % slots_.size() != h.slot || h.dtype != dtype_ || h.op != op_ ||
        h.count != std::min<uint64_t>(cfg_.chunk_elements, count_ - h.offset)) {
        ++stats_.foreign;
        return;
    }
    if ((have_[chunk / 64] >> (chunk % 64) & 1) != 0) {
        ++stats_.duplicates;
        return;
    }
    have_[chunk / 64] |= uint64_t{1} << (chunk % 64);
    std::memcpy(out_ + h.offset * esize_, payload, size_t(h.count) * esize_);
    ++delivered_;
    ++stats_.results;
    slot_state& s = slots_[h.slot];
    if (s.busy && s.chunk == chunk) {
        s.busy = false;
        if (s.next < chunks_) {
            dispatch(h.slot, now_s, up);  // the slot takes its next chunk at once
        }
    }
}

}  // namespace loom::inc
