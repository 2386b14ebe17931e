// SPDX-License-Identifier: Apache-2.0
// The fault driver (docs/architecture.md#rule-fault-injection): wraps any endpoint and, on SENDS,
// drops, duplicates, reorders or delays messages by parameters, so loss and reordering code runs in
// every build.
//
//  - drop (LOOM_FAULT_DROP, a probability): the send completes with LOOM_SUCCESS but is never
//    posted to the inner driver;
//  - duplicate (LOOM_FAULT_DUP): the message is posted twice; the send completes once, after
//    both copies did. Only messages up to the inner driver's eager limit are duplicated: a
//    duplicated rendezvous would wait for a second receive that never comes;
//  - reorder (LOOM_FAULT_REORDER): the message is held back and posted right after the next
//    send to the same peer (or, if none comes, after max(LOOM_FAULT_DELAY_US, 1 ms));
//  - delay (LOOM_FAULT_DELAY_US): every send waits that long in the wrapper before it is
//    posted (in order; reordering comes only from the reorder rule).
// Receives and control notices pass through untouched. Decisions come from a splitmix64
// stream seeded with LOOM_FAULT_SEED and the rank, so a run is reproducible. The counts are
// in fault_stats. Everything is sized at open (LOOM_FAULT_MAX_OPS): no allocation per message.
//
// A datagram endpoint (datagram.hh) is wrapped by the same decisions (fault_dice.hh): a
// dropped frame is not sent, a duplicated one is sent twice, a reordered one waits in a
// one-frame buffer until the next frame has gone (or the next recv(), so a lone frame is late,
// never lost). Delay does not apply: datagrams carry their own timers.
#pragma once

#include <cstdint>
#include <memory>

#include "drivers/datagram.hh"
#include "drivers/driver.hh"

namespace loom::drivers::fault {

struct fault_config {
    double drop       = 0;  // probability per send
    double dup        = 0;
    double reorder    = 0;
    uint64_t delay_us = 0;  // every send is held this long
    uint64_t seed     = 1;
    uint32_t max_ops  = 65536;  // operations in flight through the wrapper
};

/// Reads LOOM_FAULT_*; a probability outside [0, 1] is an invalid-argument error.
result<fault_config> config_from_params();

struct fault_stats {
    uint64_t sends      = 0;  // sends posted by the user (control notices excluded)
    uint64_t dropped    = 0;
    uint64_t duplicated = 0;
    uint64_t reordered  = 0;
    uint64_t delayed    = 0;
};

/// Wraps `inner` (not yet connected) for `rank`.
result<std::unique_ptr<endpoint>> wrap(std::unique_ptr<endpoint> inner, const fault_config& config,
                                       int rank, int size);

/// The wrapper's counters, or null when `ep` is not a fault wrapper.
const fault_stats* stats_of(const endpoint& ep);
/// The wrapped endpoint, or null when `ep` is not a fault wrapper.
endpoint* inner_of(endpoint& ep);

}  // namespace loom::drivers::fault
