// SPDX-License-Identifier: Apache-2.0
// The shm doorbell's protocol (drivers/shm/shm_doorbell.hh) under stress: two threads play
// ping-pong through mailboxes, each sleeping on its own doorbell between messages, with
// random pauses so a message lands before the announcement, between it and the futex wait,
// and during the wait. A lost wake-up shows as a wait that runs into its 2 s timeout; the
// test also checks that the futex path ran at all (peers rang sleepers).
#include <time.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "base/clock.hh"
#include "drivers/shm/shm_doorbell.hh"
#include "test_main.hh"

using loom::drivers::shm::doorbell;

namespace {

constexpr int64_t timeout_ns = 2'000'000'000;
constexpr int rounds         = 20000;

struct side {
    doorbell bell{};
    alignas(64) std::atomic<uint32_t> mailbox{0};  // the last round the peer sent
    uint32_t sleeps = 0, longest_wait_us = 0;
};

double now_us() {
    return loom::now_s() * 1e6;
}

void pause_randomly(std::mt19937& rng) {
    int r = int(rng() % 8);
    if (r < 4) {
        return;  // answer at once
    }
    for (int i = int(rng() % 2000); i > 0; --i) {
        std::atomic_signal_fence(std::memory_order_seq_cst);  // a busy pause of some length
    }
    if (r == 7) {
        timespec ts{0, long(rng() % 50'000)};  // or long enough for the peer to sleep
        ::nanosleep(&ts, nullptr);
    }
}

// Waits until `me.mailbox` reaches `round`, sleeping on `me.bell` as the engine does.
void wait_for(side& me, uint32_t round) {
    while (me.mailbox.load(std::memory_order_acquire) < round) {
        uint64_t token = loom::drivers::shm::arm(me.bell);
        if (me.mailbox.load(std::memory_order_acquire) >= round) {  // the pass after arming
            loom::drivers::shm::sleep_on(me.bell, token, 0);
            break;
        }
        double t0 = now_us();
        loom::drivers::shm::sleep_on(me.bell, token, timeout_ns);
        double waited = now_us() - t0;
        ++me.sleeps;
        if (waited > me.longest_wait_us) {
            me.longest_wait_us = uint32_t(waited);
        }
    }
}

void send_to(side& peer, uint32_t round) {
    peer.mailbox.store(round, std::memory_order_release);
    loom::drivers::shm::ring_if_asleep(peer.bell);
}

void play(side& me, side& peer, bool serve, uint32_t seed) {
    std::mt19937 rng(seed);
    for (uint32_t round = 1; round <= rounds; ++round) {
        if (serve) {
            pause_randomly(rng);
            send_to(peer, round);
            wait_for(me, round);
        } else {
            wait_for(me, round);
            pause_randomly(rng);
            send_to(peer, round);
        }
    }
}

void many_sleeps_and_wakes_lose_none(void**) {
    static side a, b;
    uint32_t seed = uint32_t(time(nullptr));
    std::printf("# seed %u\n", seed);
    double t0 = now_us();
    std::thread other([&] { play(b, a, false, seed + 1); });
    play(a, b, true, seed);
    other.join();
    double took_ms = (now_us() - t0) / 1e3;
    std::printf("# %d rounds in %.0f ms; sleeps %u + %u; longest wait %u + %u us; rings %u + %u\n",
                rounds, took_ms, a.sleeps, b.sleeps, a.longest_wait_us, b.longest_wait_us,
                a.bell.rings.load(), b.bell.rings.load());
    assert_true(a.longest_wait_us < timeout_ns / 2000 && b.longest_wait_us < timeout_ns / 2000);
    assert_true(a.sleeps + b.sleeps > 0);
    assert_true(a.bell.rings.load() + b.bell.rings.load() > 0);
    assert_int_equal(a.bell.sleepers.load(), 0);
    assert_int_equal(b.bell.sleepers.load(), 0);
}

// Nobody asleep: a send makes no system call (the count of rings stays zero).
void a_busy_pair_never_rings(void**) {
    side s;
    for (uint32_t i = 1; i <= 1000; ++i) {
        send_to(s, i);
    }
    assert_int_equal(s.bell.rings.load(), 0);
    uint64_t token = loom::drivers::shm::arm(s.bell);
    send_to(s, 1001);
    assert_int_equal(s.bell.rings.load(), 1);                 // announced: rung
    loom::drivers::shm::sleep_on(s.bell, token, timeout_ns);  // returns at once (rung)
    assert_int_equal(s.bell.sleepers.load(), 0);
}

}  // namespace

LOOM_TEST_MAIN("drivers_shm_doorbell", cmocka_unit_test(a_busy_pair_never_rings),
               cmocka_unit_test(many_sleeps_and_wakes_lose_none))
