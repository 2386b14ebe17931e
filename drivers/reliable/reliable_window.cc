// SPDX-License-Identifier: Apache-2.0
// The sliding window's bookkeeping (reliable_window.hh): slots sized once at open.
#include "drivers/reliable/reliable_window.hh"

#include <bit>
#include <cstring>

namespace loom::drivers::reliable {

void send_window::init(size_t window, uint32_t first_seq) {
    size_t n = std::bit_ceil(window < 1 ? size_t{1} : window);
    slots_   = std::vector<tx_slot>(n);
    mask_    = uint32_t(n - 1);
    base_ = next_ = first_seq;
}

tx_slot* send_window::push() {
    tx_slot* s   = &slots_[next_ & mask_];
    s->seq       = next_++;
    s->used      = true;
    s->sacked    = false;
    s->fast_done = false;
    s->probe     = false;
    s->tries     = 0;
    s->owner     = nullptr;
    s->offset    = 0;
    s->blen      = 0;
    s->body_crc  = 0;
    return s;
}

tx_slot* send_window::at(uint32_t seq) {
    if (seq_before(seq, base_) || !seq_before(seq, next_)) {
        return nullptr;
    }
    return &slots_[seq & mask_];
}

void recv_window::init(size_t window, size_t frame_bytes) {
    size_t n     = std::bit_ceil(window < 1 ? size_t{1} : window);
    frame_bytes_ = frame_bytes;
    bytes_.assign(n * frame_bytes, 0);
    len_.assign(n, 0);
    present_.assign(n, 0);
    mask_    = uint32_t(n - 1);
    held_    = 0;
    started_ = false;
}

void recv_window::start(uint32_t first_seq) {
    expected_ = first_seq;
    std::fill(present_.begin(), present_.end(), uint8_t{0});
    held_    = 0;
    started_ = true;
}

recv_window::verdict recv_window::classify(uint32_t seq) const {
    uint32_t d = seq - expected_;
    if (d == 0) {
        return present_[seq & mask_] != 0 ? verdict::duplicate : verdict::next;
    }
    if (int32_t(d) < 0) {
        return verdict::duplicate;
    }
    if (d > mask_) {
        return verdict::beyond;
    }
    return present_[seq & mask_] != 0 ? verdict::duplicate : verdict::ahead;
}

void recv_window::store(uint32_t seq, const uint8_t* data, size_t len) {
    size_t i = seq & mask_;
    if (present_[i] != 0 || len > frame_bytes_) {
        return;
    }
    std::memcpy(bytes_.data() + i * frame_bytes_, data, len);
    len_[i]     = uint32_t(len);
    present_[i] = 1;
    ++held_;
}

bool recv_window::peek(const uint8_t** data, size_t* len) const {
    size_t i = expected_ & mask_;
    if (present_[i] == 0) {
        return false;
    }
    *data = bytes_.data() + i * frame_bytes_;
    *len  = len_[i];
    return true;
}

void recv_window::advance() {
    size_t i = expected_ & mask_;
    if (present_[i] != 0) {
        present_[i] = 0;
        --held_;
    }
    ++expected_;
}

uint64_t recv_window::sack() const {
    uint64_t bits = 0;
    if (held_ == 0) {
        return 0;
    }
    uint32_t n = mask_ < 64 ? mask_ : 64;
    for (uint32_t i = 0; i < n; ++i) {
        if (present_[(expected_ + 1 + i) & mask_] != 0) {
            bits |= uint64_t{1} << i;
        }
    }
    return bits;
}

}  // namespace loom::drivers::reliable
