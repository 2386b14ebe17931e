// SPDX-License-Identifier: Apache-2.0
// The tcp endpoint's waker (drivers/waker.hh): the kernel is the doorbell. A caller with
// nothing to do sleeps in ppoll on the endpoint's epoll descriptor (wait_fd), which turns
// readable when a connection has data or queued frames can go; bytes that arrived before
// the caller's last poll pass keep it readable, so no wake-up is lost and arming is free.
//
// Work handed over inside the process (ring) comes through an eventfd polled beside the
// epoll descriptor, outside the epoll set so poll() never sees it. Arming empties it and a
// ring writes it, in the order of waker.hh: a ring after arm_sleep leaves it readable and
// the sleep returns at once; what was handed over before arm_sleep is found by the pass
// that follows it.
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

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

wake_event::wake_event() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

wake_event::~wake_event() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void wake_event::ring() {
    uint64_t one = 1;
    if (fd_ >= 0) {
        (void)!::write(fd_, &one, sizeof one);  // EAGAIN: the counter is full, so readable
    }
}

void wake_event::clear() {
    uint64_t count = 0;
    if (fd_ >= 0) {
        (void)!::read(fd_, &count, sizeof count);  // EAGAIN: not rung
    }
}

// The token says whether a peer is stalled, decided here: arm_sleep runs where the
// endpoint may be used, sleep may run beside another thread posting.
uint64_t tcp_endpoint::arm_sleep() {
    bell_.clear();
    return stalled_count_ > 0 || epoll_fd_ < 0 ? 1 : 0;
}

void tcp_endpoint::sleep(uint64_t token, int64_t timeout_ns) {
    if (timeout_ns <= 0) {
        return;
    }
    // Stalled (or no peers): only a ring ends the short sleep early.
    pollfd pfd[2] = {{bell_.fd(), POLLIN, 0}, {epoll_fd_, POLLIN, 0}};
    timespec ts   = to_timespec(token != 0 ? std::min(timeout_ns, stalled_sleep_ns) : timeout_ns);
    ::ppoll(pfd, token != 0 ? 1 : 2, &ts, nullptr);
}

void tcp_endpoint::ring() {
    bell_.ring();
}

waker tcp_endpoint::idle_waker() {
    return waker_of(this);
}

}  // namespace loom::drivers::tcp
