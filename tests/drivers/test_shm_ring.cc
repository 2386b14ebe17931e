// SPDX-License-Identifier: Apache-2.0
// drivers/shm/shm_ring.hh: the lock-free SPSC ring. Empty/full edges, wrap-around of the
// free-running 32-bit counters, back-pressure (peek without release), and a stress run of
// millions of items between two threads with every item checked in order (run it under
// TSan and ASan too, docs/architecture.md#rule-memory-model).
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/spsc_ring.hh"
#include "test_main.hh"

using namespace loom;

namespace {

struct ring_mem {
    ring_mem(uint32_t slots, uint32_t slot_bytes)
        : bytes(ring_spsc_bytes(slots, slot_bytes)),
          mem(std::aligned_alloc(cache_line, (bytes + cache_line - 1) / cache_line * cache_line)),
          view(ring_spsc_view::at(mem, slots, slot_bytes)) {
        ring_spsc_init(mem);
    }
    ~ring_mem() { std::free(mem); }
    size_t bytes;
    void* mem;
    ring_spsc_view view;
};

}  // namespace

static void empty_and_full_edges(void**) {
    ring_mem r(4, 64);
    ring_spsc_producer p(r.view);
    ring_spsc_consumer c(r.view);
    assert_null(c.peek());
    for (uint32_t i = 0; i < 4; ++i) {
        char* s = p.try_reserve();
        assert_non_null(s);
        std::memcpy(s, &i, sizeof(i));
        p.publish();
    }
    assert_null(p.try_reserve());  // full at exactly the slot count
    for (uint32_t i = 0; i < 4; ++i) {
        const char* s = c.peek();
        assert_non_null(s);
        uint32_t v;
        std::memcpy(&v, s, sizeof(v));
        assert_int_equal(v, i);
        c.release();
    }
    assert_null(c.peek());
    assert_non_null(p.try_reserve());
}

static void peek_without_release_keeps_the_slot(void**) {
    ring_mem r(2, 64);
    ring_spsc_producer p(r.view);
    ring_spsc_consumer c(r.view);
    *p.try_reserve() = 'a';
    p.publish();
    *p.try_reserve() = 'b';
    p.publish();
    assert_int_equal(*c.peek(), 'a');
    assert_int_equal(*c.peek(), 'a');  // back-pressure: the consumer leaves it there
    assert_null(p.try_reserve());
    c.release();
    assert_non_null(p.try_reserve());
    assert_int_equal(*c.peek(), 'b');
}

static void counters_wrap_around_32_bits(void**) {
    ring_mem r(8, 64);
    uint32_t start = 0xfffffff0u;  // 16 before the wrap
    r.view.control->head.store(start, std::memory_order_relaxed);
    r.view.control->tail.store(start, std::memory_order_relaxed);
    ring_spsc_producer p(r.view);
    ring_spsc_consumer c(r.view);
    uint32_t next_in = 0, next_out = 0;
    for (int round = 0; round < 10; ++round) {
        for (int k = 0; k < 5; ++k) {
            char* s = p.try_reserve();
            assert_non_null(s);
            std::memcpy(s, &next_in, sizeof(next_in));
            ++next_in;
            p.publish();
        }
        for (int k = 0; k < 5; ++k) {
            const char* s = c.peek();
            assert_non_null(s);
            uint32_t v;
            std::memcpy(&v, s, sizeof(v));
            assert_int_equal(v, next_out);
            ++next_out;
            c.release();
        }
    }
    assert_true(r.view.control->head.load() < start);  // it did wrap
    assert_null(c.peek());
}

// Two threads, millions of items: each slot carries a sequence number and a value derived
// from it; the consumer checks both, in order, so a lost, duplicated, reordered or torn
// item fails.
static void stress_two_threads_millions_of_items(void**) {
    constexpr uint64_t items = 4'000'000;
    ring_mem r(256, 64);
    std::atomic<uint64_t> bad{~uint64_t{0}};
    std::thread consumer([&] {
        ring_spsc_consumer c(r.view);
        uint64_t expect = 0;
        int idle        = 0;
        while (expect < items) {
            const char* s = c.peek();
            if (s == nullptr) {
                if (++idle > 100) {
                    sched_yield();  // 2 cores shared with other tests: give the producer a turn
                }
                continue;
            }
            idle = 0;
            uint64_t v[2];
            std::memcpy(v, s, sizeof(v));
            if (v[0] != expect || v[1] != ~(expect * 0x9e3779b97f4a7c15ULL)) {
                bad.store(expect, std::memory_order_relaxed);
                return;
            }
            c.release();
            ++expect;
        }
    });
    ring_spsc_producer p(r.view);
    int idle = 0;
    for (uint64_t i = 0; i < items && bad.load(std::memory_order_relaxed) == ~uint64_t{0};) {
        char* s = p.try_reserve();
        if (s == nullptr) {
            if (++idle > 100) {
                sched_yield();
            }
            continue;
        }
        idle          = 0;
        uint64_t v[2] = {i, ~(i * 0x9e3779b97f4a7c15ULL)};
        std::memcpy(s, v, sizeof(v));
        p.publish();
        ++i;
    }
    consumer.join();
    if (bad.load() != ~uint64_t{0}) {
        fail_msg("item %llu arrived wrong", (unsigned long long)bad.load());
    }
}

LOOM_TEST_MAIN("drivers_shm_ring", cmocka_unit_test(empty_and_full_edges),
               cmocka_unit_test(peek_without_release_keeps_the_slot),
               cmocka_unit_test(counters_wrap_around_32_bits),
               cmocka_unit_test(stress_two_threads_millions_of_items))
