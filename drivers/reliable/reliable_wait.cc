// SPDX-License-Identifier: Apache-2.0
// The reliable endpoint's waker (drivers/waker.hh), offered where every link has an rx event
// descriptor (frame_link::rx_event_fd: a DPDK port's rx interrupt): one epoll descriptor
// over all of them, edge-triggered and never read (the descriptor may be the queue itself).
//
// arm_sleep arms every link's interrupt and decides how long a sleep may last: while frames
// are in flight or queued toward a peer, no longer than one tick of the timer wheel (a
// retransmission, a probe or a send waiting for window room needs a poll pass, not a frame);
// otherwise the caller's timeout (the engine's at most 1 ms keeps liveness checks going).
// sleep waits, then disarms. A frame that came before arm_sleep is found by the caller's
// pass after it (waker.hh's order), and one after it ends the sleep: no lost wake-up. There
// is no ring(): a progress thread over this endpoint naps instead.
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "drivers/reliable/reliable_endpoint.hh"

namespace loom::drivers::reliable {
namespace {

// The wheel's tick (reliable_endpoint.cc): the finest a timer can be late by anyway.
constexpr int64_t busy_sleep_cap_ns = 250'000;

}  // namespace

waker rel_endpoint::idle_waker() {
    if (wake_fd_ >= 0) {
        return waker_of(this);
    }
    if (links_.empty()) {
        return {};
    }
    for (auto& l : links_) {
        if (l->rx_event_fd() < 0) {
            return {};  // a link nothing wakes us for: the caller naps
        }
    }
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
        return {};
    }
    for (auto& l : links_) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLET;
        if (epoll_ctl(fd, EPOLL_CTL_ADD, l->rx_event_fd(), &ev) != 0) {
            ::close(fd);
            return {};
        }
    }
    wake_fd_ = fd;
    return waker_of(this);
}

uint64_t rel_endpoint::arm_sleep() {
    for (auto& l : links_) {
        l->arm_rx_event();
    }
    sleep_cap_ns_ = INT64_MAX;
    for (int r : peer_ranks_) {
        const peer& p = peers_[size_t(r)];
        if (!p.tx.empty() || !p.sendq.empty() || p.ack_due) {
            sleep_cap_ns_ = busy_sleep_cap_ns;
            break;
        }
    }
    return 0;
}

void rel_endpoint::sleep(uint64_t, int64_t timeout_ns) {
    int64_t ns = std::min(timeout_ns, sleep_cap_ns_);
    if (ns > 0 && wake_fd_ >= 0) {
        timespec ts{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
        epoll_event ev[8];
        if (epoll_pwait2(wake_fd_, ev, 8, &ts, nullptr) < 0 && errno == ENOSYS) {
            // A kernel before 5.11: whole milliseconds, rounded up (never a busy return).
            (void)epoll_wait(wake_fd_, ev, 8, int((ns + 999'999) / 1'000'000));
        }
    }
    for (auto& l : links_) {
        l->disarm_rx_event();
    }
}

void rel_endpoint::close_waker() {
    if (wake_fd_ >= 0) {
        ::close(wake_fd_);
        wake_fd_ = -1;
    }
}

}  // namespace loom::drivers::reliable
