// SPDX-License-Identifier: Apache-2.0
// A lock-free single-producer single-consumer ring of fixed-size slots
// (docs/architecture.md#rule-memory-model), laid out in memory that two processes map (the shm
// driver's per-pair rings) or two threads share (the stress test).
//
// Shape, after DPDK's rte_ring: the slot count is a power of two; `head` (next slot the
// producer fills) and `tail` (next slot the consumer frees) are free-running 32-bit counters,
// masked only to index a slot, so head - tail is the fill level even across wrap-around;
// each counter has its own cache line, written by one side only. Each side also keeps a
// private copy of the other side's counter and reloads it only when the ring looks full
// (producer) or empty (consumer), so a busy ring does not bounce the other side's line on
// every message.
//
// Memory order (pairs named A/R):
//   R1 producer: head.store(h + 1, release) after writing the slot
//   A1 consumer: head.load(acquire) before reading the slot          pairs with R1
//   R2 consumer: tail.store(t + 1, release) after it is done with the slot
//   A2 producer: tail.load(acquire) before overwriting the slot      pairs with R2
// A slot's bytes are plain memory: they are ordered by R1/A1 (written before the consumer
// may read them) and by R2/A2 (read before the producer may overwrite them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace loom {

constexpr size_t cache_line = 64;

struct ring_control {
    alignas(cache_line) std::atomic<uint32_t> head;  // written by the producer only
    alignas(cache_line) std::atomic<uint32_t> tail;  // written by the consumer only
};
static_assert(sizeof(ring_control) == 2 * cache_line, "head and tail on separate lines");
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "address-free atomics are required in memory shared between processes");

/// The bytes a ring of `slots` slots of `slot_bytes` occupies: control lines, then slots.
inline size_t ring_spsc_bytes(uint32_t slots, uint32_t slot_bytes) {
    return sizeof(ring_control) + size_t{slots} * slot_bytes;
}

/// Initialises a ring in fresh memory (before either side attaches).
inline void ring_spsc_init(void* mem) {
    auto* c = static_cast<ring_control*>(mem);
    c->head.store(0, std::memory_order_relaxed);  // published by whatever publishes `mem`
    c->tail.store(0, std::memory_order_relaxed);
}

/// Geometry shared by both ends of one ring.
struct ring_spsc_view {
    ring_control* control = nullptr;
    char* slots           = nullptr;
    uint32_t mask         = 0;  // slot count - 1
    uint32_t slot_bytes   = 0;

    static ring_spsc_view at(void* mem, uint32_t slots, uint32_t slot_bytes) {
        ring_spsc_view v;
        v.control    = static_cast<ring_control*>(mem);
        v.slots      = static_cast<char*>(mem) + sizeof(ring_control);
        v.mask       = slots - 1;
        v.slot_bytes = slot_bytes;
        return v;
    }
    char* slot(uint32_t index) const { return slots + size_t{index & mask} * slot_bytes; }
    uint32_t capacity() const { return mask + 1; }
};

/// The producing end. One thread (or process) at a time.
class ring_spsc_producer {
  public:
    ring_spsc_producer() = default;
    explicit ring_spsc_producer(ring_spsc_view v)
        : v_(v),
          head_(v.control->head.load(std::memory_order_relaxed)),          // our own counter
          tail_cache_(v.control->tail.load(std::memory_order_acquire)) {}  // A2

    /// The next free slot, or null when the ring is full. Does not publish.
    char* try_reserve() {
        if (head_ - tail_cache_ == v_.capacity()) {
            tail_cache_ = v_.control->tail.load(std::memory_order_acquire);  // A2
            if (head_ - tail_cache_ == v_.capacity()) {
                return nullptr;
            }
        }
        return v_.slot(head_);
    }
    /// Publishes the slot returned by try_reserve().
    void publish() {
        ++head_;
        v_.control->head.store(head_, std::memory_order_release);  // R1
    }
    bool attached() const { return v_.control != nullptr; }

  private:
    ring_spsc_view v_;
    uint32_t head_       = 0;
    uint32_t tail_cache_ = 0;
};

/// The consuming end. One thread (or process) at a time.
class ring_spsc_consumer {
  public:
    ring_spsc_consumer() = default;
    explicit ring_spsc_consumer(ring_spsc_view v)
        : v_(v),
          tail_(v.control->tail.load(std::memory_order_relaxed)),          // our own counter
          head_cache_(v.control->head.load(std::memory_order_acquire)) {}  // A1

    /// The oldest published slot, or null when the ring is empty. Does not free it: a
    /// consumer that cannot take the message yet leaves it there (back-pressure).
    const char* peek() {
        if (tail_ == head_cache_) {
            head_cache_ = v_.control->head.load(std::memory_order_acquire);  // A1
            if (tail_ == head_cache_) {
                return nullptr;
            }
        }
        return v_.slot(tail_);
    }
    /// Frees the slot returned by peek() for the producer.
    void release() {
        ++tail_;
        v_.control->tail.store(tail_, std::memory_order_release);  // R2
    }
    bool attached() const { return v_.control != nullptr; }

  private:
    ring_spsc_view v_;
    uint32_t tail_       = 0;
    uint32_t head_cache_ = 0;
};

}  // namespace loom
