#include "engine/idle_policy.hh"

#include <sched.h>
#include <time.h>

namespace loom::engine {
namespace {

// About 2-5 µs of polling before yielding: one shm ping-pong is below that.
constexpr uint32_t spin_passes = 64;
// Yielding is cheap when others want the core and immediate when nobody does.
constexpr uint32_t yield_passes = spin_passes + 256;
// A nap short enough not to add latency a peer would notice, long enough to free the core.
constexpr long nap_ns = 50 * 1000;

}  // namespace

void idle_policy::after_poll(bool busy) {
    if (busy) {
        idle_passes_ = 0;
        return;
    }
    ++idle_passes_;
    if (idle_passes_ <= spin_passes) {
        return;
    }
    if (idle_passes_ <= yield_passes) {
        sched_yield();
        return;
    }
    timespec nap{0, nap_ns};
    nanosleep(&nap, nullptr);
}

}  // namespace loom::engine
