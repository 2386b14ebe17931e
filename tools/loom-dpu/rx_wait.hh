// SPDX-License-Identifier: Apache-2.0
// How an idle loom-dpu leaves the run queue until a frame comes: one epoll descriptor over
// the rx interrupt of every port (drivers/dpdk/dpdk_port.hh rx_interrupt_fd), in the order
// that loses no wake-up: arm every port, poll once more, then wait (bounded) unless that
// poll found work, and disarm on waking. Arming is a call per port per idle period, never
// per frame, so the busy path stays free of system calls.
//
// Only usable when every port has an interrupt: one port that cannot wake the DPU would
// have its frames wait out the whole timeout. Otherwise the router keeps its yield and
// sleep policy, and the ports that cannot are named once in the log. DPDK 22.11's memif,
// the emulation's ports, has no rx interrupt (docs/tools/loom-dpu.md#idle-policy).
#pragma once

#include <cstdint>
#include <vector>

#include "ports.hh"

namespace loom::dpu {

class rx_wait {
  public:
    /// `wanted` false (--busy-poll): never usable, nothing logged.
    rx_wait(std::vector<dpu_port>& ports, int node, bool wanted);
    ~rx_wait();
    rx_wait(const rx_wait&)            = delete;
    rx_wait& operator=(const rx_wait&) = delete;

    bool usable() const { return epoll_fd_ >= 0; }
    /// Arms every port's interrupt: a frame from here on wakes sleep().
    void arm();
    /// Waits up to timeout_ms (0: not at all) for a frame, then disarms every port.
    void sleep(int timeout_ms);
    uint64_t sleeps() const { return sleeps_; }

  private:
    std::vector<dpu_port>& ports_;
    int epoll_fd_    = -1;
    uint64_t sleeps_ = 0;
};

}  // namespace loom::dpu
