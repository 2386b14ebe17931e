// SPDX-License-Identifier: Apache-2.0
// drivers/common/registration_cache.hh over a counting backend: hits neither register nor
// allocate a region, misses register the page-aligned range, the least recently used
// unused region is evicted at capacity, all in use is NO_RESOURCE, invalidate drops only
// unused overlapping regions, clear deregisters all, a failing backend's error comes back,
// revoke deregisters a region in use and frees its slot with the last release.
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "drivers/common/registration_cache.hh"
#include "test_main.hh"

using namespace loom;

namespace {

struct counting_backend {
    struct registration {
        uintptr_t base = 0;
        size_t len     = 0;
        int id         = 0;
    };
    using handle = registration;

    result<handle> add(void* base, size_t len) {
        if (fail_next) {
            fail_next = false;
            return system_error("register: refused");
        }
        ++adds;
        ++live;
        return registration{reinterpret_cast<uintptr_t>(base), len, ++next_id};
    }
    void remove(handle& h) {
        ++removes;
        --live;
        removed.push_back(h.id);
    }

    int adds = 0, removes = 0, live = 0, next_id = 0;
    bool fail_next = false;
    std::vector<int> removed;
};

using cache_t = drivers::common::registration_cache<counting_backend>;

size_t page() {
    return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// A buffer of `pages` whole pages, page-aligned, and kept for the test's life.
char* pages_of(std::vector<char>& storage, size_t pages) {
    storage.assign((pages + 1) * page(), 0);
    uintptr_t a = reinterpret_cast<uintptr_t>(storage.data());
    return reinterpret_cast<char*>((a + page() - 1) & ~(uintptr_t(page()) - 1));
}

}  // namespace

static void miss_registers_the_page_aligned_range(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 4);
    std::vector<char> s;
    char* p = pages_of(s, 4);
    auto r  = c.acquire(p + 10, page());  // straddles two pages
    assert_true(r.is_ok());
    assert_int_equal((*r)->base, reinterpret_cast<uintptr_t>(p));
    assert_int_equal((*r)->len, 2 * page());
    assert_int_equal((*r)->handle.len, 2 * page());
    assert_int_equal(be.adds, 1);
    assert_int_equal(c.misses(), 1);
    assert_int_equal(c.hits(), 0);
    c.release(*r);
}

static void hit_calls_no_backend(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 4);
    std::vector<char> s;
    char* p = pages_of(s, 4);
    auto a  = c.acquire(p, 3 * page());
    assert_true(a.is_ok());
    c.release(*a);
    for (int i = 0; i < 100; ++i) {
        auto b = c.acquire(p + page() + i, 100);  // inside the first registration
        assert_true(b.is_ok());
        assert_ptr_equal(*b, *a);
        c.release(*b);
    }
    assert_int_equal(be.adds, 1);
    assert_int_equal(c.hits(), 100);
    assert_int_equal(c.misses(), 1);
    // A range reaching past the region is a miss: a new, larger registration.
    auto d = c.acquire(p + 2 * page(), 2 * page());
    assert_true(d.is_ok());
    assert_int_equal(be.adds, 2);
    c.release(*d);
}

static void lru_unused_region_is_evicted(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 3);
    std::vector<char> s;
    char* p = pages_of(s, 8);
    cache_t::region* r[4];
    for (int i = 0; i < 3; ++i) {
        auto x = c.acquire(p + i * 2 * page(), 1);
        assert_true(x.is_ok());
        r[i] = *x;
        c.release(r[i]);
    }
    // Region 0 used again: region 1 is now the least recently used.
    auto again = c.acquire(p, 1);
    assert_ptr_equal(*again, r[0]);
    c.release(*again);
    auto x = c.acquire(p + 6 * page(), 1);
    assert_true(x.is_ok());
    assert_int_equal(c.evictions(), 1);
    assert_int_equal(be.removed.size(), 1);
    assert_int_equal(be.removed[0], 2);  // the second registration
    assert_int_equal(c.registered(), 3);
    c.release(*x);
}

static void all_in_use_is_no_resource(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 2);
    std::vector<char> s;
    char* p = pages_of(s, 8);
    auto a  = c.acquire(p, 1);
    auto b  = c.acquire(p + 2 * page(), 1);
    assert_true(a.is_ok() && b.is_ok());
    auto full = c.acquire(p + 4 * page(), 1);
    assert_false(full.is_ok());
    assert_int_equal(full.error().code(), LOOM_ERR_NO_RESOURCE);
    assert_int_equal(be.adds, 2);
    // A region acquired twice stays in use until both references are back.
    auto a2 = c.acquire(p, 1);
    assert_ptr_equal(*a2, *a);
    c.release(*a);
    c.release(*b);
    auto next = c.acquire(p + 4 * page(), 1);  // evicts b, not a (still referenced once)
    assert_true(next.is_ok());
    assert_int_equal(be.removed.size(), 1);
    assert_int_equal(be.removed[0], 2);  // b, the second registration
    c.release(*a2);
    c.release(*next);
}

static void invalidate_drops_only_unused_overlaps(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 4);
    std::vector<char> s;
    char* p    = pages_of(s, 8);
    auto used  = c.acquire(p, 1);               // page 0, stays in use
    auto idle1 = c.acquire(p + 2 * page(), 1);  // page 2
    auto idle2 = c.acquire(p + 5 * page(), 1);  // page 5
    c.release(*idle1);
    c.release(*idle2);
    c.invalidate(p, 3 * page());  // pages 0-2: drops page 2, keeps page 0 (in use)
    assert_int_equal(be.removes, 1);
    assert_int_equal(c.registered(), 2);
    auto again = c.acquire(p + 2 * page(), 1);  // a miss now
    assert_int_equal(be.adds, 4);
    c.release(*again);
    c.release(*used);
}

static void clear_deregisters_everything(void**) {
    counting_backend be;
    {
        cache_t c;
        c.open(&be, 4);
        std::vector<char> s;
        char* p = pages_of(s, 8);
        auto a  = c.acquire(p, 1);
        auto b  = c.acquire(p + 3 * page(), 1);
        c.release(*b);
        c.clear();
        assert_int_equal(be.live, 0);
        assert_int_equal(c.registered(), 0);
        auto d = c.acquire(p + 6 * page(), 1);  // usable again after clear
        assert_true(d.is_ok());
        (void)a;
    }
    assert_int_equal(be.live, 0);  // the destructor deregisters the rest
}

static void backend_error_comes_back(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 2);
    std::vector<char> s;
    char* p      = pages_of(s, 2);
    be.fail_next = true;
    auto a       = c.acquire(p, 1);
    assert_false(a.is_ok());
    assert_int_equal(a.error().code(), LOOM_ERR_SYSTEM);
    assert_int_equal(c.registered(), 0);
    auto b = c.acquire(p, 1);  // the slot came back
    auto d = c.acquire(p + page(), 1);
    assert_true(b.is_ok() && d.is_ok());
}

static void revoke_deregisters_a_region_in_use(void**) {
    counting_backend be;
    cache_t c;
    c.open(&be, 1);
    std::vector<char> s;
    char* p = pages_of(s, 4);
    auto a  = c.acquire(p, 1);
    auto b  = c.acquire(p, 1);  // two holders
    assert_ptr_equal(*a, *b);
    c.revoke(*a);
    assert_int_equal(be.removes, 1);
    assert_int_equal(c.registered(), 0);
    auto full = c.acquire(p + 2 * page(), 1);  // its slot is still held
    assert_int_equal(full.error().code(), LOOM_ERR_NO_RESOURCE);
    c.release(*a);
    c.release(*b);  // the last holder: the slot comes back
    auto again = c.acquire(p, 1);
    assert_true(again.is_ok());
    assert_int_equal(be.adds, 2);  // a miss: registered anew
    c.release(*again);
}

LOOM_TEST_MAIN("drivers_registration_cache",
               cmocka_unit_test(miss_registers_the_page_aligned_range),
               cmocka_unit_test(hit_calls_no_backend),
               cmocka_unit_test(lru_unused_region_is_evicted),
               cmocka_unit_test(all_in_use_is_no_resource),
               cmocka_unit_test(invalidate_drops_only_unused_overlaps),
               cmocka_unit_test(clear_deregisters_everything),
               cmocka_unit_test(backend_error_comes_back),
               cmocka_unit_test(revoke_deregisters_a_region_in_use))
