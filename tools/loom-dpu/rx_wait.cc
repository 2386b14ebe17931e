// SPDX-License-Identifier: Apache-2.0
// loom-dpu's sleep on rx interrupts (rx_wait.hh).
#include "rx_wait.hh"

#include <sys/epoll.h>
#include <unistd.h>

#include <string>

#include "base/log.hh"

namespace loom::dpu {

rx_wait::rx_wait(std::vector<dpu_port>& ports, int node, bool wanted) : ports_(ports) {
    if (!wanted) {
        return;
    }
    std::string without;
    for (const dpu_port& p : ports_) {
        if (p.dev != nullptr && p.dev->rx_interrupt_fd() < 0) {
            without += (without.empty() ? "" : "; ") + p.label + ": " + p.dev->rx_interrupt_why();
        }
    }
    if (!without.empty()) {
        LOOM_LOG_INFO(log::subsystem::net,
                      "loom-dpu node %d: idles by yield and sleep, not on rx interrupts (%s)", node,
                      without.c_str());
        return;
    }
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
        LOOM_LOG_WARN(log::subsystem::net,
                      "loom-dpu node %d: epoll_create1 failed: idles by "
                      "yield and sleep",
                      node);
        return;
    }
    for (const dpu_port& p : ports_) {
        if (p.dev == nullptr) {
            continue;
        }
        // Edge-triggered and never read: the descriptor may be the queue itself (dpdk_port.hh).
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLET;
        if (epoll_ctl(fd, EPOLL_CTL_ADD, p.dev->rx_interrupt_fd(), &ev) != 0) {
            LOOM_LOG_WARN(log::subsystem::net,
                          "loom-dpu node %d: cannot watch the rx interrupt of %s: idles by "
                          "yield and sleep",
                          node, p.label.c_str());
            ::close(fd);
            return;
        }
    }
    epoll_fd_ = fd;
    LOOM_LOG_INFO(log::subsystem::net, "loom-dpu node %d: idles on its ports' rx interrupts", node);
}

rx_wait::~rx_wait() {
    if (epoll_fd_ >= 0) {
        ::close(epoll_fd_);
    }
}

void rx_wait::arm() {
    for (dpu_port& p : ports_) {
        if (p.dev != nullptr) {
            p.dev->arm_rx_interrupt();
        }
    }
}

void rx_wait::sleep(int timeout_ms) {
    if (timeout_ms > 0) {
        epoll_event ev[8];
        // EINTR (a stop or dump signal) ends the wait like a frame: the loop looks at both.
        (void)epoll_wait(epoll_fd_, ev, 8, timeout_ms);
        ++sleeps_;
    }
    for (dpu_port& p : ports_) {
        if (p.dev != nullptr) {
            p.dev->disarm_rx_interrupt();
        }
    }
}

}  // namespace loom::dpu
