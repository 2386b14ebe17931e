// SPDX-License-Identifier: Apache-2.0
// The tcp driver's pool of buffers for early (unexpected) small messages; they meet their
// receives through drivers/common/matcher.hh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace loom::drivers::tcp {

/// Buffers for early eager messages, in size classes 256 B x 4^k up to the eager limit.
/// A class grows by one chunk when its free list is empty (the backlog passed its
/// high-water mark), up to a byte cap; after that get() answers null and the caller stops
/// reading the connection until a buffer comes back.
class slot_pool {
  public:
    void init(uint64_t eager_limit, uint64_t cap_bytes);
    uint8_t* get(uint64_t len);
    void put(uint8_t* slot, uint64_t len);

  private:
    static constexpr int max_classes = 8;
    int class_of(uint64_t len) const;
    bool grow(int cls);

    struct free_node {
        free_node* next;
    };
    free_node* free_[max_classes]      = {};
    uint64_t class_bytes_[max_classes] = {};
    int classes_                       = 0;
    uint64_t bytes_ = 0, cap_ = 0;
    std::vector<std::unique_ptr<uint8_t[]>> chunks_;
};

}  // namespace loom::drivers::tcp
