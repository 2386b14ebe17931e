// The tcp endpoint's waker (drivers/waker.hh): the kernel is the doorbell. A caller with
// nothing to do sleeps in ppoll on the endpoint's epoll descriptor (wait_fd), which turns
// readable when a connection has data or queued frames can go; bytes that arrived before
// the caller's last poll pass keep it readable, so no wake-up is lost and arming is free.
#include <poll.h>
#include <time.h>

#include <algorithm>

#include "drivers/tcp/tcp.hh"

namespace loom::drivers::tcp {
namespace {

// A peer whose header waits for table or pool space keeps its socket readable while
// nothing can be read: waiting on the socket would return at once, so such a sleep is a
// short nap instead (the space comes back when this rank posts receives).
constexpr int64_t stalled_sleep_ns = 50'000;

timespec to_timespec(int64_t ns) {
    return timespec{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
}

}  // namespace

// The token says whether a peer is stalled, decided here: arm_sleep runs where the
// endpoint may be used, sleep may run beside another thread posting.
uint64_t tcp_endpoint::arm_sleep() {
    return stalled_count_ > 0 || epoll_fd_ < 0 ? 1 : 0;
}

void tcp_endpoint::sleep(uint64_t token, int64_t timeout_ns) {
    if (timeout_ns <= 0) {
        return;
    }
    if (token != 0) {
        timespec nap = to_timespec(std::min(timeout_ns, stalled_sleep_ns));
        ::nanosleep(&nap, nullptr);
        return;
    }
    pollfd pfd{epoll_fd_, POLLIN, 0};
    timespec ts = to_timespec(timeout_ns);
    ::ppoll(&pfd, 1, &ts, nullptr);
}

waker tcp_endpoint::idle_waker() {
    return waker_of(this);
}

}  // namespace loom::drivers::tcp
