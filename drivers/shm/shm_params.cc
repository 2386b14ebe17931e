#include "shm_params.hh"

namespace loom::drivers::shm::params {

constinit const loom::params::int_param slot_bytes{
    "LOOM_SHM_SLOT_BYTES", "4096", "bytes",
    "shm ring slot size (power of two, 256..1048576); a message up to the slot less its 64-byte "
    "header goes eagerly through the ring, a longer one by rendezvous"};
constinit const loom::params::int_param ring_slots{
    "LOOM_SHM_RING_SLOTS", "64", "slots",
    "slots per ordered pair of ranks in the shm rings (power of two, 2..65536)"};
constinit const loom::params::int_param unexpected{
    "LOOM_SHM_UNEXPECTED", "128", "messages",
    "per-peer shm pool for messages that arrive before their receive (eager copies and rendezvous "
    "descriptors); when full, the sender waits in the ring (back-pressure)"};
constinit const loom::params::int_param max_ops{
    "LOOM_SHM_MAX_OPS", "4096", "operations",
    "operations one shm endpoint keeps posted at once; more is LOOM_ERR_NO_RESOURCE"};
constinit const loom::params::int_param bounce_bytes{
    "LOOM_SHM_BOUNCE_BYTES", "1048576", "bytes",
    "per-pair shared bounce buffer for large shm messages when single-copy process_vm_readv (CMA) "
    "is not permitted (power of two, at least 4096)"};
constinit const loom::params::choice_param cma{
    "LOOM_SHM_CMA", "auto", "auto|off",
    "large shm messages by single-copy process_vm_readv: auto (when a connect-time probe succeeds) "
    "or off (always the bounce buffer)"};
constinit const loom::params::real_param liveness_ms{
    "LOOM_SHM_LIVENESS_MS", "5", "ms",
    "how often shm checks that a peer process is alive while operations toward it are pending"};

const loom::params::component component{
    "shm", {&slot_bytes, &ring_slots, &unexpected, &max_ops, &bounce_bytes, &cma, &liveness_ms}};

}  // namespace loom::drivers::shm::params
