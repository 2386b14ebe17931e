// SPDX-License-Identifier: Apache-2.0
// The shm driver: ring geometry, pools, the large-message path, liveness.
#pragma once

#include "base/params.hh"

namespace loom::drivers::shm::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"shm"};

inline const loom::params::int_param slot_bytes{
    component, "LOOM_SHM_SLOT_BYTES", "4096", "bytes",
    "shm ring slot size (power of two, 256..1048576); a message up to the slot less its 64-byte "
    "header goes eagerly through the ring, a longer one by rendezvous"};
inline const loom::params::int_param ring_slots{
    component, "LOOM_SHM_RING_SLOTS", "64", "slots",
    "slots per ordered pair of ranks in the shm rings (power of two, 2..65536)"};
inline const loom::params::int_param unexpected{
    component, "LOOM_SHM_UNEXPECTED", "128", "messages",
    "per-peer shm pool for messages that arrive before their receive (eager copies and rendezvous "
    "descriptors); when full, the sender waits in the ring (back-pressure)"};
inline const loom::params::int_param max_ops{
    component, "LOOM_SHM_MAX_OPS", "4096", "operations",
    "operations one shm endpoint keeps posted at once; more is LOOM_ERR_NO_RESOURCE"};
inline const loom::params::int_param bounce_bytes{
    component, "LOOM_SHM_BOUNCE_BYTES", "1048576", "bytes",
    "per-pair shared bounce buffer for large shm messages when single-copy process_vm_readv (CMA) "
    "is not permitted (power of two, at least 4096)"};
inline const loom::params::choice_param cma{
    component, "LOOM_SHM_CMA", "auto", "auto|off",
    "large shm messages by single-copy process_vm_readv: auto (when a connect-time probe succeeds) "
    "or off (always the bounce buffer)"};
inline const loom::params::real_param liveness_ms{
    component, "LOOM_SHM_LIVENESS_MS", "5", "ms",
    "how often shm checks that a peer process is alive while operations toward it are pending"};

}  // namespace loom::drivers::shm::params
