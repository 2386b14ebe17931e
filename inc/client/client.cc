// SPDX-License-Identifier: Apache-2.0
// The endpoint side of in-network aggregation (client.hh).
#include "inc/client/client.hh"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

namespace loom::inc {

client::client(const client_config& c) : cfg_(c) {
    slots_.resize(std::max<uint32_t>(1, c.window));
    packet_.resize(header_bytes + max_payload_bytes);
}

status client::start(uint32_t seq, loom_dtype_t dtype, loom_op_t op, const void* in, void* out,
                     size_t count, double now_s, const collective_shape& shape) {
    if (running_ && !done()) {
        return invalid_argument("inc client rank " + std::to_string(cfg_.rank) + ": collective " +
                                std::to_string(seq_) + " is still running");
    }
    if (!broken_) {
        return broken_;
    }
    esize_ = element_bytes(dtype);
    if (esize_ == 0 || (op != LOOM_SUM && op != LOOM_MIN && op != LOOM_MAX)) {
        return invalid_argument("inc: dtype " + std::to_string(int(dtype)) + " / op " +
                                std::to_string(int(op)) +
                                " not carried (int32, int64, float32, float64, bfloat16, "
                                "float16 × sum, min, max)");
    }
    chunk_ = cfg_.chunk_elements != 0 ? cfg_.chunk_elements : max_payload_bytes / esize_;
    if (chunk_ * esize_ > max_payload_bytes) {
        return invalid_argument("inc: chunk of " + std::to_string(cfg_.chunk_elements) +
                                " elements exceeds the " + std::to_string(max_payload_bytes) +
                                "-byte payload");
    }
    bool is_root = shape.root == cfg_.rank;
    sends_data_  = (shape.flags & flag_from_root) == 0 || is_root;
    gets_data_   = (shape.flags & flag_to_root) == 0 || is_root;
    if (count > 0 && ((sends_data_ && in == nullptr) || (gets_data_ && out == nullptr))) {
        return invalid_argument("inc client rank " + std::to_string(cfg_.rank) +
                                ": a buffer this rank's part needs is missing");
    }
    shape_     = shape;
    running_   = true;
    seq_       = seq;
    dtype_     = dtype;
    op_        = op;
    in_        = static_cast<const uint8_t*>(in);
    out_       = static_cast<uint8_t*>(out);
    count_     = count;
    chunks_    = (count + chunk_ - 1) / chunk_;
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
    uint64_t first = s.chunk * chunk_;
    header h;
    h.kind   = packet_kind::contribute;
    h.dtype  = dtype_;
    h.op     = op_;
    h.flags  = uint16_t((cfg_.deterministic ? flag_deterministic : 0) | (resend ? flag_resend : 0) |
                        (s.chunk + 1 == chunks_ ? flag_last_chunk : 0) | shape_.flags |
                        (sends_data_ ? 0 : flag_no_data));
    h.root   = shape_.root;
    h.job    = cfg_.job;
    h.comm   = cfg_.comm;
    h.seq    = seq_;
    h.slot   = slot;
    h.offset = shape_.first + first;
    h.count  = uint32_t(std::min<uint64_t>(chunk_, count_ - first));
    h.contributor = cfg_.rank;
    size_t len    = encode(h, sends_data_ ? in_ + first * esize_ : nullptr, packet_.data());
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
    s.rto    = std::max(cfg_.rto_s, std::min(4 * srtt_s_, cfg_.max_rto_s));
    s.resent = false;
    send_chunk(i, false, now_s, up);
}

status client::poll(double now_s, uplink& up) {
    if (!running_ || done()) {
        return status::ok();
    }
    if (!broken_) {
        return broken_;
    }
    for (uint32_t i = 0; i < slots_.size(); ++i) {
        slot_state& s = slots_[i];
        if (!s.busy && s.next < chunks_) {
            dispatch(i, now_s, up);
        } else if (s.busy && now_s - s.sent_at >= s.rto) {
            s.rto    = std::min(s.rto * 2, cfg_.max_rto_s);
            s.resent = true;
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

double client::next_timer_s() const {
    if (!running()) {
        return std::numeric_limits<double>::infinity();
    }
    double at = deadline_;
    for (const slot_state& s : slots_) {
        if (!s.busy && s.next < chunks_) {
            return 0;  // poll() sends it at once
        }
        at = s.busy ? std::min(at, s.sent_at + s.rto) : at;
    }
    return at;
}

void client::on_packet(const header& h, const uint8_t* payload, double now_s, uplink& up) {
    if (h.kind == packet_kind::nack && h.job == cfg_.job && h.comm == cfg_.comm) {
        ++stats_.nacks;
        if (broken_) {
            auto code = loom_status_t(h.seq);  // a node's nack carries its status code in seq
            broken_   = status(code == LOOM_SUCCESS ? LOOM_ERR_PEER_FAILURE : code,
                             "inc client rank " + std::to_string(cfg_.rank) + ": " +
                                 std::string(reinterpret_cast<const char*>(payload), h.count));
        }
        return;
    }
    if (h.kind != packet_kind::result || !running_ || h.job != cfg_.job || h.comm != cfg_.comm ||
        h.seq != seq_ || h.slot >= slots_.size() || h.offset < shape_.first ||
        (h.offset - shape_.first) % chunk_ != 0) {
        ++stats_.foreign;
        return;
    }
    uint64_t at    = h.offset - shape_.first;
    uint64_t chunk = at / chunk_;
    bool has_data  = (h.flags & flag_no_data) == 0;
    if (chunk >= chunks_ || chunk % slots_.size() != h.slot || h.dtype != dtype_ || h.op != op_ ||
        h.count != std::min<uint64_t>(chunk_, count_ - at) || (gets_data_ && !has_data)) {
        ++stats_.foreign;
        return;
    }
    if ((have_[chunk / 64] >> (chunk % 64) & 1) != 0) {
        ++stats_.duplicates;
        return;
    }
    have_[chunk / 64] |= uint64_t{1} << (chunk % 64);
    if (gets_data_) {
        std::memcpy(out_ + at * esize_, payload, size_t(h.count) * esize_);
    }
    ++delivered_;
    ++stats_.results;
    slot_state& s = slots_[h.slot];
    if (s.busy && s.chunk == chunk) {
        s.busy = false;
        if (!s.resent) {
            double rtt = now_s - s.sent_at;
            srtt_s_    = srtt_s_ == 0 ? rtt : 0.875 * srtt_s_ + 0.125 * rtt;
        }
        if (s.next < chunks_) {
            dispatch(h.slot, now_s, up);  // the slot takes its next chunk at once
        }
    }
}

}  // namespace loom::inc
