// SPDX-License-Identifier: Apache-2.0
// A FIFO on one array that is sized up front and reused: the forwarder's queues (chunks to
// retry, stalled headers, completions) would allocate per element as std::deque does.
// It grows (doubling) only when a queue outgrows every earlier peak, so a steady stream of
// traffic allocates nothing.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace loom::drivers::forward {

template <typename T>
class fifo {
  public:
    explicit fifo(size_t capacity = 16) : items_(capacity < 1 ? 1 : capacity) {}

    bool empty() const { return count_ == 0; }
    size_t size() const { return count_; }

    void push_back(const T& v) {
        if (count_ == items_.size()) {
            grow();
        }
        items_[(head_ + count_) % items_.size()] = v;
        ++count_;
    }
    const T& front() const { return items_[head_]; }
    void pop_front() {
        head_ = (head_ + 1) % items_.size();
        --count_;
    }

  private:
    void grow() {
        std::vector<T> bigger(items_.size() * 2);
        for (size_t i = 0; i < count_; ++i) {
            bigger[i] = std::move(items_[(head_ + i) % items_.size()]);
        }
        items_.swap(bigger);
        head_ = 0;
    }

    std::vector<T> items_;
    size_t head_  = 0;
    size_t count_ = 0;
};

}  // namespace loom::drivers::forward
