// SPDX-License-Identifier: Apache-2.0
// The pool of early-arrival buffers (tcp_slot_pool.hh).
#include "drivers/tcp/tcp_slot_pool.hh"

namespace loom::drivers::tcp {

namespace {
constexpr uint64_t smallest_class = 256;  // holds a free-list link and a typical small message
constexpr uint64_t chunk_bytes    = uint64_t{1} << 20;  // one growth step per class
}  // namespace

void slot_pool::init(uint64_t eager_limit, uint64_t cap_bytes) {
    cap_     = cap_bytes;
    classes_ = 0;
    for (uint64_t sz = smallest_class; classes_ < max_classes; sz *= 4) {
        class_bytes_[classes_++] = sz;
        if (sz >= eager_limit) {
            break;
        }
    }
    // One chunk of the smallest class up front: the common case (many small early
    // arrivals) never allocates after connect.
    grow(0);
}

int slot_pool::class_of(uint64_t len) const {
    for (int c = 0; c < classes_; ++c) {
        if (len <= class_bytes_[c]) {
            return c;
        }
    }
    return -1;
}

bool slot_pool::grow(int cls) {
    uint64_t size  = class_bytes_[cls];
    uint64_t count = size >= chunk_bytes ? 4 : chunk_bytes / size;
    if (bytes_ + size * count > cap_) {
        return false;
    }
    auto chunk = std::make_unique<uint8_t[]>(size * count);
    for (uint64_t i = 0; i < count; ++i) {
        auto* node = reinterpret_cast<free_node*>(chunk.get() + i * size);
        node->next = free_[cls];
        free_[cls] = node;
    }
    bytes_ += size * count;
    chunks_.push_back(std::move(chunk));
    return true;
}

uint8_t* slot_pool::get(uint64_t len) {
    int cls = class_of(len);
    if (cls < 0 || (free_[cls] == nullptr && !grow(cls))) {
        return nullptr;
    }
    free_node* node = free_[cls];
    free_[cls]      = node->next;
    return reinterpret_cast<uint8_t*>(node);
}

void slot_pool::put(uint8_t* slot, uint64_t len) {
    int cls    = class_of(len);
    auto* node = reinterpret_cast<free_node*>(slot);
    node->next = free_[cls];
    free_[cls] = node;
}

}  // namespace loom::drivers::tcp
