// SPDX-License-Identifier: Apache-2.0
// The doorbell of an shm segment: how a rank sleeps until a peer's message arrives
// (drivers/waker.hh). It lives in the sleeper's own segment, beside the rings its peers
// write, so every sender can reach it.
//
// A sender rings only when the owner announced that it sleeps, so a busy pair makes no
// system call; the check costs a fence and a load of a line that stays shared while
// nobody sleeps. The announcement and the message are ordered like Dekker's protocol:
//   F1 owner:  sleepers += 1; fence(seq_cst); token = rings; then one more poll pass, then
//              futex_wait(rings, token) only if that pass found nothing
//   F2 sender: publish the message (release); fence(seq_cst); if sleepers > 0:
//              rings += 1, futex_wake(rings)
// Either the sender's load sees the announcement (it bumps `rings`, so the owner's wait
// returns at once or is woken) or the owner's pass, which follows its fence, sees the
// message. The futex is a shared one (the word is in memory mapped by several processes).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/spsc_ring.hh"

namespace loom::drivers::shm {

struct doorbell {
    alignas(cache_line) std::atomic<uint32_t> sleepers;  // owner: +1 while it may sleep
    std::atomic<uint32_t> rings;                         // senders: +1 per wake (futex word)
};

/// Owner (F1): announces a sleep; returns the token for sleep_on().
uint64_t arm(doorbell& d);
/// Owner (F1): waits up to `timeout_ns` (0: not at all) unless rung since arm(), then ends
/// the announcement.
void sleep_on(doorbell& d, uint64_t token, int64_t timeout_ns);
/// Sender: wakes every sleeper (out of line: the rare path).
void ring(doorbell& d);

/// Sender (F2), after publishing anything the owner may wait for: a message in its ring,
/// an ack word, bounce-channel progress.
inline void ring_if_asleep(doorbell& d) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // F2
    if (d.sleepers.load(std::memory_order_relaxed) != 0) {
        ring(d);
    }
}

}  // namespace loom::drivers::shm
