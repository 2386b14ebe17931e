// SPDX-License-Identifier: Apache-2.0
// The doorbell's futex (shm_doorbell.hh) and the shm endpoint's waker (drivers/waker.hh).
#include "drivers/shm/shm_doorbell.hh"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "drivers/shm/shm.hh"

namespace loom::drivers::shm {
namespace {

// While a send waits for ring space, nothing rings when the space comes (the receiver
// frees slots without looking for sleepers, which keeps its drain loop free of fences):
// such a sleep is kept as short as the nap it replaces.
constexpr int64_t queued_sleep_ns = 50'000;

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
    return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

uint64_t arm(doorbell& d) {
    d.sleepers.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // F1
    return d.rings.load(std::memory_order_acquire);
}

void sleep_on(doorbell& d, uint64_t token, int64_t timeout_ns) {
    if (timeout_ns > 0 && d.rings.load(std::memory_order_acquire) == uint32_t(token)) {
        timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
        // EAGAIN (rung since arm), EINTR and ETIMEDOUT all mean: go and poll.
        futex(&d.rings, FUTEX_WAIT, uint32_t(token), &ts);
    }
    d.sleepers.fetch_sub(1, std::memory_order_relaxed);
}

void ring(doorbell& d) {
    d.rings.fetch_add(1, std::memory_order_release);
    futex(&d.rings, FUTEX_WAKE, uint32_t(~0u >> 1), nullptr);
}

// The token carries the doorbell's count (low half) and whether the sleep must stay short
// (high half), decided here: arm_sleep runs where the endpoint may be used, sleep may run
// beside another thread posting.
uint64_t shm_endpoint::arm_sleep() {
    uint64_t queued = 0;
    for (const peer_state* ps : active_) {
        queued |= ps->queued.empty() ? 0 : 1;
    }
    return arm(own_.header()->bell) | (queued << 32);
}

void shm_endpoint::sleep(uint64_t token, int64_t timeout_ns) {
    if ((token >> 32) != 0) {
        timeout_ns = std::min(timeout_ns, queued_sleep_ns);
    }
    sleep_on(own_.header()->bell, uint32_t(token), timeout_ns);
}

// Work handed over inside the process rings the own doorbell like a peer's message would.
void shm_endpoint::ring() {
    ring_if_asleep(own_.header()->bell);
}

waker shm_endpoint::idle_waker() {
    return waker_of(this);
}

}  // namespace loom::drivers::shm
