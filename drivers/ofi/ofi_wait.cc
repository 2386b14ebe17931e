// SPDX-License-Identifier: Apache-2.0
// The ofi endpoint's waker (drivers/waker.hh): the completion queue's wait descriptor, where
// the provider offers one (FI_WAIT_FD: tcp;ofi_rxm, net), is the doorbell; fi_trywait says
// whether sleeping on it loses nothing (it fails while completions or progress are due, and
// then the sleep returns at once for another poll pass). Work handed over inside the process
// (ring) comes through an eventfd polled beside it. Providers without a wait descriptor
// (shm, udp;ofi_rxd here) offer no waker, nor does net, whose descriptor turns readable
// with nothing to report (a sleeper woke with nothing to do): callers nap.
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "drivers/ofi/ofi.hh"

namespace loom::drivers::ofi {
namespace {

// Internal messages or transfers waiting for room need polling, not a wait: a short nap.
constexpr int64_t busy_sleep_ns = 50'000;

}  // namespace

uint64_t ofi_endpoint::arm_sleep() {
    uint64_t count = 0;
    if (bell_fd_ >= 0) {
        (void)!::read(bell_fd_, &count, sizeof count);  // EAGAIN: not rung
    }
    bool busy = outgoing_head_ < outgoing_.size() || !waiting_.empty() || !held_.empty() ||
                !repost_.empty();
    return busy ? 1 : 0;
}

void ofi_endpoint::sleep(uint64_t token, int64_t timeout_ns) {
    if (timeout_ns <= 0 || !fabric_) {
        return;
    }
    bool can_wait = token == 0 && fabric_->try_wait();
    if (token == 0 && !can_wait) {
        return;  // completions or progress are due: poll again
    }
    int64_t ns    = token != 0 ? std::min(timeout_ns, busy_sleep_ns) : timeout_ns;
    timespec ts   = {time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
    pollfd pfd[2] = {{bell_fd_, POLLIN, 0}, {fabric_->wait_fd(), POLLIN, 0}};
    ::ppoll(pfd, can_wait ? 2 : 1, &ts, nullptr);
}

void ofi_endpoint::ring() {
    uint64_t one = 1;
    if (bell_fd_ >= 0) {
        (void)!::write(bell_fd_, &one, sizeof one);
    }
}

waker ofi_endpoint::idle_waker() {
    if (!fabric_ || !fabric_->wakes_reliably()) {
        return {};
    }
    if (bell_fd_ < 0) {
        bell_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    return waker_of(this);
}

}  // namespace loom::drivers::ofi
