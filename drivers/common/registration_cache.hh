// SPDX-License-Identifier: Apache-2.0
// A cache of memory registrations (RDMA transports: libfabric's fi_mr_reg, verbs'
// ibv_reg_mr), keyed by page-aligned ranges. Registering pins pages and costs tens of
// microseconds, so a transport registers a buffer once and finds the registration again on
// later messages from the same buffer.
//
// The backend B does the registering:
//   using handle = ...;                                  // what a registration is
//   result<handle> add(void* base, size_t len);          // page-aligned base and len
//   void remove(handle& h);
// Regions are reference-counted: acquire() hands one out covering the range asked for, and
// release() gives it back; an unused region stays registered (a later hit is free) until it
// is the least recently used one at capacity, or invalidate() / clear() drops it.
//
// Shape. Regions live in one array sized by open(); a hit scans the most recently used
// first (a collective touches few buffers, over and over) and neither allocates nor calls
// the backend. Not thread-safe: one endpoint owns one cache.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hh"

namespace loom::drivers::common {

template <class B>
class registration_cache {
  public:
    struct region {
        region* next   = nullptr;  // the recency list (most recent first), or the free list
        region* prev   = nullptr;
        uintptr_t base = 0;  // page-aligned
        size_t len     = 0;  // a whole number of pages
        typename B::handle handle{};
        uint32_t refs = 0;  // acquires not yet released
        bool live     = false;

        bool covers(uintptr_t a, size_t n) const { return a >= base && a + n <= base + len; }
    };

    registration_cache()                                     = default;
    registration_cache(const registration_cache&)            = delete;
    registration_cache& operator=(const registration_cache&) = delete;
    ~registration_cache() { clear(); }

    /// Sized once: at most `max_regions` registrations at a time.
    void open(B* backend, size_t max_regions) {
        clear();
        backend_ = backend;
        slots_   = std::vector<region>(max_regions);
        free_    = nullptr;
        for (size_t i = max_regions; i-- > 0;) {
            slots_[i].next = free_;
            free_          = &slots_[i];
        }
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    }

    /// A registered region covering [addr, addr + len), its reference taken. A miss
    /// registers the page-aligned range, evicting the least recently used unused region at
    /// capacity; LOOM_ERR_NO_RESOURCE when every region is in use.
    result<region*> acquire(const void* addr, size_t len) {
        uintptr_t a = reinterpret_cast<uintptr_t>(addr);
        size_t n    = len == 0 ? 1 : len;
        for (region* r = head_; r != nullptr; r = r->next) {
            if (r->covers(a, n)) {
                ++hits_;
                touch(r);
                ++r->refs;
                return r;
            }
        }
        ++misses_;
        region* r = take_slot();
        if (r == nullptr) {
            return status(
                LOOM_ERR_NO_RESOURCE,
                "registration cache: all " + std::to_string(slots_.size()) + " regions in use");
        }
        uintptr_t lo = a & ~(uintptr_t(page_) - 1);
        uintptr_t hi = (a + n + page_ - 1) & ~(uintptr_t(page_) - 1);
        auto h       = backend_->add(reinterpret_cast<void*>(lo), hi - lo);
        if (!h) {
            put_slot(r);
            return h.error();
        }
        r->base   = lo;
        r->len    = hi - lo;
        r->handle = std::move(h).value();
        r->refs   = 1;
        r->live   = true;
        push_front(r);
        return r;
    }

    /// Gives back a reference acquire() handed out; the region stays registered (a revoked
    /// one returns to the pool with its last reference).
    void release(region* r) {
        if (r != nullptr && r->refs > 0) {
            --r->refs;
            if (r->refs == 0 && !r->live) {
                put_slot(r);
            }
        }
    }

    /// Deregisters `r` now, in use or not (a cancelled transfer whose peer must no longer
    /// reach the memory): later acquires miss it, and its slot returns to the pool when
    /// the last holder releases it.
    void revoke(region* r) {
        if (r == nullptr || !r->live) {
            return;
        }
        unlink(r);
        backend_->remove(r->handle);
        r->live = false;
        if (r->refs == 0) {
            put_slot(r);
        }
    }

    /// Deregisters every unused region overlapping [addr, addr + len) (memory being freed
    /// or remapped); regions in use stay until released and invalidated again.
    void invalidate(const void* addr, size_t len) {
        uintptr_t a = reinterpret_cast<uintptr_t>(addr);
        for (region* r = head_; r != nullptr;) {
            region* next = r->next;
            if (r->refs == 0 && a < r->base + r->len && r->base < a + len) {
                drop(r);
            }
            r = next;
        }
    }

    /// Deregisters every region, in use or not (the endpoint is closing).
    void clear() {
        while (region* r = head_) {
            drop(r);
        }
    }

    uint64_t hits() const { return hits_; }
    uint64_t misses() const { return misses_; }
    uint64_t evictions() const { return evictions_; }
    size_t registered() const { return count_; }
    size_t capacity() const { return slots_.size(); }

  private:
    void push_front(region* r) {
        r->prev = nullptr;
        r->next = head_;
        if (head_ != nullptr) {
            head_->prev = r;
        } else {
            tail_ = r;
        }
        head_ = r;
        ++count_;
    }
    void unlink(region* r) {
        (r->prev != nullptr ? r->prev->next : head_) = r->next;
        (r->next != nullptr ? r->next->prev : tail_) = r->prev;
        r->next = r->prev = nullptr;
        --count_;
    }
    void touch(region* r) {
        if (head_ != r) {
            unlink(r);
            push_front(r);
        }
    }
    region* take_slot() {
        if (free_ == nullptr) {
            // The least recently used unused region: from the back.
            region* victim = tail_;
            while (victim != nullptr && victim->refs != 0) {
                victim = victim->prev;
            }
            if (victim == nullptr) {
                return nullptr;
            }
            ++evictions_;
            drop(victim);
        }
        region* r = free_;
        free_     = r->next;
        r->next = r->prev = nullptr;
        return r;
    }
    void put_slot(region* r) {
        r->live = false;
        r->refs = 0;
        r->prev = nullptr;
        r->next = free_;
        free_   = r;
    }
    void drop(region* r) {
        unlink(r);
        backend_->remove(r->handle);
        put_slot(r);
    }

    B* backend_ = nullptr;
    std::vector<region> slots_;
    region* head_       = nullptr;  // most recently used
    region* tail_       = nullptr;  // least recently used
    size_t count_       = 0;        // registered regions
    region* free_       = nullptr;
    size_t page_        = 4096;
    uint64_t hits_      = 0;
    uint64_t misses_    = 0;
    uint64_t evictions_ = 0;
};

}  // namespace loom::drivers::common
