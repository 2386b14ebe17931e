// SPDX-License-Identifier: Apache-2.0
// A queue on one array sized when the endpoint opens (a power of two): finished operations
// waiting for poll() to hand them out, or a wrapper's messages on their way. The endpoint
// bounds what it admits (operations in flight, control notices held) so the ring never
// overflows; push() asserts it.
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::drivers::common {

template <class T>
class completion_ring {
  public:
    /// Room for at least `capacity` entries.
    void init(size_t capacity) {
        size_t n = std::bit_ceil(capacity < 1 ? size_t{1} : capacity);
        items_.assign(n, T{});
        mask_ = n - 1;
        head_ = tail_ = 0;
    }
    bool empty() const { return head_ == tail_; }
    size_t size() const { return size_t(tail_ - head_); }
    size_t capacity() const { return items_.size(); }

    void push(const T& v) {
        assert(size() < capacity());
        items_[tail_ & mask_] = v;
        ++tail_;
    }
    T& front() { return items_[head_ & mask_]; }
    const T& front() const { return items_[head_ & mask_]; }
    /// The i-th entry from the front (a scan, for cancel).
    T& operator[](size_t i) { return items_[(head_ + i) & mask_]; }
    void pop() { ++head_; }

  private:
    std::vector<T> items_;
    uint64_t head_ = 0, tail_ = 0, mask_ = 0;
};

}  // namespace loom::drivers::common
