// SPDX-License-Identifier: Apache-2.0
#include "comm/request_registry.hh"

#include <atomic>
#include <mutex>

#include "comm/comm.hh"

namespace loom::comm::request_registry {
namespace {

constexpr int max_pools        = 4096;
constexpr size_t max_pool_size = 4096;
constexpr uint64_t index_shift = 1, slot_shift = 16, generation_shift = 32;
constexpr uint64_t index_mask = 0x7fff, slot_mask = 0xffff;
constexpr uint64_t handle_marker = 1;  // odd: never the address of an object

struct pool {
    std::atomic<request_handle*> handles{nullptr};
    std::atomic<size_t> size{0};
};
pool pools[max_pools];
std::mutex registration;  // add/remove only (communicator create/destroy)
std::atomic<uint32_t> generations{0};

}  // namespace

static_assert(sizeof(uintptr_t) == 8, "handles pack slot, index and generation in 64 bits");

int add_pool(request_handle* handles, size_t n) {
    if (n > max_pool_size) {
        return -1;
    }
    std::lock_guard<std::mutex> hold(registration);
    for (int s = 0; s < max_pools; ++s) {
        if (pools[s].handles.load(std::memory_order_relaxed) == nullptr) {
            pools[s].size.store(n, std::memory_order_relaxed);
            pools[s].handles.store(handles, std::memory_order_release);  // R: decode's acquire
            return s;
        }
    }
    return -1;
}

void remove_pool(int slot) {
    if (slot < 0 || slot >= max_pools) {
        return;
    }
    std::lock_guard<std::mutex> hold(registration);
    pools[slot].handles.store(nullptr, std::memory_order_release);
    pools[slot].size.store(0, std::memory_order_relaxed);
}

uint32_t next_generation() {
    uint32_t g = generations.fetch_add(1, std::memory_order_relaxed) + 1;
    return g == 0 ? generations.fetch_add(1, std::memory_order_relaxed) + 1 : g;
}

loom_request_t encode(int slot, size_t index, uint32_t generation) {
    uint64_t v = handle_marker | (uint64_t{index} & index_mask) << index_shift |
                 (uint64_t(slot) & slot_mask) << slot_shift |
                 uint64_t{generation} << generation_shift;
    return reinterpret_cast<loom_request_t>(static_cast<uintptr_t>(v));
}

request_handle* decode(loom_request_t req) {
    auto v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(req));
    if ((v & handle_marker) == 0) {
        return nullptr;
    }
    uint64_t slot = (v >> slot_shift) & slot_mask, index = (v >> index_shift) & index_mask;
    auto generation = static_cast<uint32_t>(v >> generation_shift);
    if (slot >= max_pools || generation == 0) {
        return nullptr;
    }
    request_handle* handles = pools[slot].handles.load(std::memory_order_acquire);
    if (handles == nullptr || index >= pools[slot].size.load(std::memory_order_relaxed)) {
        return nullptr;
    }
    request_handle* h = &handles[index];
    return h->in_use && h->generation == generation ? h : nullptr;
}

}  // namespace loom::comm::request_registry
