// SPDX-License-Identifier: Apache-2.0
// An intrusive doubly-linked list over objects that carry `next` and `prev` pointers. The
// drivers keep their operations in fixed pools sized at connect time and move them between
// lists (posted, pending, awaiting an ack, done) without allocating: each object is in at
// most one list at a time, so one pair of links suffices.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace loom {

template <class T>
class intrusive_list {
  public:
    bool empty() const { return head_ == nullptr; }
    size_t size() const { return size_; }
    T* front() const { return head_; }

    void push_back(T* x) {
        x->next = nullptr;
        x->prev = tail_;
        if (tail_ != nullptr) {
            tail_->next = x;
        } else {
            head_ = x;
        }
        tail_ = x;
        ++size_;
    }

    void remove(T* x) {
        assert(size_ > 0);
        if (x->prev != nullptr) {
            x->prev->next = x->next;
        } else {
            head_ = x->next;
        }
        if (x->next != nullptr) {
            x->next->prev = x->prev;
        } else {
            tail_ = x->prev;
        }
        x->next = x->prev = nullptr;
        --size_;
    }

    T* pop_front() {
        T* x = head_;
        if (x != nullptr) {
            remove(x);
        }
        return x;
    }

    /// The first element whose tag equals `tag` (arrival order: the oldest wins), or null.
    /// Linear: lists are short (operations in flight to one peer), and the engine keeps at
    /// most one message per (peer, tag) in flight.
    /// The first element of another tag of the same call whose immediate differs
    /// (driver.hh call_tag_mask): evidence of mismatched calls.
    template <class Same>
    T* find_mismatch(uint64_t tag, uint64_t imm, Same same_call_other_imm) const {
        for (T* x = head_; x != nullptr; x = x->next) {
            if (same_call_other_imm(tag, imm, x->tag, x->imm)) {
                return x;
            }
        }
        return nullptr;
    }

    T* find_tag(uint64_t tag) const {
        for (T* x = head_; x != nullptr; x = x->next) {
            if (x->tag == tag) {
                return x;
            }
        }
        return nullptr;
    }

  private:
    T* head_     = nullptr;
    T* tail_     = nullptr;
    size_t size_ = 0;
};

}  // namespace loom
