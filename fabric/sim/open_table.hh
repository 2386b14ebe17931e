// SPDX-License-Identifier: Apache-2.0
// Internal to fabric/sim: a hash table with open addressing (linear probing, deletion by
// backward shift), so that the event loop's look-ups allocate only when the table grows,
// never per insert as std::unordered_map's nodes do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/hash.hh"

namespace loom::sim::detail {

using loom::mix64;

struct key128 {
    uint64_t hi, lo;
    bool operator==(const key128&) const = default;
};

inline uint64_t hash_key(uint64_t k) {
    return mix64(k);
}
inline uint64_t hash_key(const key128& k) {
    return mix64(k.hi ^ mix64(k.lo));
}

template <class Key, class Value>
class open_table {
  public:
    Value* find(const Key& k) {
        if (slots_.empty()) {
            return nullptr;
        }
        for (size_t i = home(k);; i = (i + 1) & mask()) {
            if (!used_[i]) {
                return nullptr;
            }
            if (slots_[i].first == k) {
                return &slots_[i].second;
            }
        }
    }
    /// Inserts k (which must be absent) and returns its value.
    Value& insert(const Key& k, const Value& v) {
        if ((size_ + 1) * 2 > slots_.size()) {
            grow();
        }
        size_t i = home(k);
        while (used_[i]) {
            i = (i + 1) & mask();
        }
        used_[i]  = 1;
        slots_[i] = {k, v};
        ++size_;
        return slots_[i].second;
    }
    /// Removes k if present; returns whether it was.
    bool erase(const Key& k) {
        if (slots_.empty()) {
            return false;
        }
        size_t i = home(k);
        while (used_[i] && !(slots_[i].first == k)) {
            i = (i + 1) & mask();
        }
        if (!used_[i]) {
            return false;
        }
        // Backward shift: pull later entries of the probe run into the hole when their
        // home lies at or before it (cyclically).
        for (size_t j = (i + 1) & mask(); used_[j]; j = (j + 1) & mask()) {
            size_t h = home(slots_[j].first);
            if (((j - h) & mask()) >= ((j - i) & mask())) {
                slots_[i] = slots_[j];
                i         = j;
            }
        }
        used_[i] = 0;
        --size_;
        return true;
    }
    size_t size() const { return size_; }

  private:
    size_t mask() const { return slots_.size() - 1; }
    size_t home(const Key& k) const { return static_cast<size_t>(hash_key(k)) & mask(); }
    void grow() {
        std::vector<std::pair<Key, Value>> old;
        std::vector<uint8_t> old_used;
        old.swap(slots_);
        old_used.swap(used_);
        size_t cap = old.empty() ? 64 : old.size() * 2;
        slots_.resize(cap);
        used_.assign(cap, 0);
        size_ = 0;
        for (size_t i = 0; i < old.size(); ++i) {
            if (old_used[i]) {
                insert(old[i].first, old[i].second);
            }
        }
    }

    std::vector<std::pair<Key, Value>> slots_;
    std::vector<uint8_t> used_;
    size_t size_ = 0;
};

}  // namespace loom::sim::detail
