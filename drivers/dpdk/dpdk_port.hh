// SPDX-License-Identifier: Apache-2.0
// One DPDK ethdev port as loom uses it: one rx and one tx queue, an mbuf pool of its own
// sized for both rings and the bursts in flight, the largest MTU the port allows up to
// LOOM_DPDK_MTU, and an mbuf data room that holds a whole frame (so no frame is chained).
// Opened from a vdev string probed at run time ("net_memif...,role=client,...") or by the
// name of a port the EAL already has; closed (stopped, closed, its vdev removed) on
// destruction. The frames on it are dpdk_link.hh's business.
#pragma once

#include <rte_ether.h>
#include <rte_mempool.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.hh"

namespace loom::drivers::dpdk {

/// Frames per rte_eth_rx_burst / rte_eth_tx_burst call (DPDK's usual burst).
constexpr uint16_t burst_size = 32;

struct port_config {
    /// A vdev string to probe ("net_memif_x,role=server,..."), or an existing port's name.
    std::string device;
    /// Wait (up to link_timeout_s) for the link to come up before open() returns.
    bool wait_link = true;
    /// Start may fail until the other side is there (a memif client before its server
    /// listens): try again until link_timeout_s.
    bool retry_start = false;
    /// With retry_start: a start that connected but whose link did not come up within a
    /// growing window is stopped and tried again (a memif server still being set up refuses
    /// once and is not asked again). False where the caller knows the server listens (the
    /// job's store said so): the link is then awaited for the whole link_timeout_s, since
    /// stopping a client in the middle of its handshake makes DPDK 22.11's memif server close
    /// a socket its interrupt thread still watches, which aborts the server's process.
    bool restart_link_down = true;
    /// An af_packet port's kernel interface: its MTU is read (SIOCGIFMTU) and left as it is,
    /// since the interface belongs to the host. Empty: the port's MTU is set.
    std::string kernel_iface;
    /// Bytes an mbuf must hold past its headroom beyond a whole frame (af_packet: its ring
    /// frames, which it copies whole).
    size_t min_data_room  = 0;
    double link_timeout_s = 10;
    /// Ask for an rx queue interrupt (intr_conf.rxq), so an idle poller can sleep until a
    /// frame comes (rx_interrupt_fd()). A port whose driver has none still opens: DPDK
    /// 22.11's memif accepts the setting but offers no descriptor (rx_interrupt_why() says).
    bool rx_interrupts = false;
};

class port {
  public:
    /// Starts the EAL if need be, probes or finds the port, sets it up and starts it.
    static result<std::unique_ptr<port>> open(const port_config& config);
    ~port();
    port(const port&)            = delete;
    port& operator=(const port&) = delete;

    uint16_t id() const { return id_; }
    const std::string& name() const { return name_; }
    /// Bytes of Ethernet payload per frame (DPDK's MTU: the 14-byte header comes on top).
    size_t mtu() const { return mtu_; }
    const rte_ether_addr& mac() const { return mac_; }
    rte_mempool* pool() const { return pool_; }
    /// The link's state now (rte_eth_link_get_nowait: a flag for memif, an ioctl for
    /// af_packet, so not per frame).
    bool link_up() const;
    /// Waits for the link to come up; an error naming the port after timeout_s.
    status wait_link(double timeout_s) const;
    /// A receive of no frames, once the link is up: a memif client's receive is what gives
    /// its server free buffers to write into, so a frame its server sends before the
    /// client's first recv() would otherwise be dropped (a hand-shake's first message).
    void post_rx_buffers();
    /// "dpdk port 0 (net_memif_loom0, net_memif)".
    std::string describe() const;

    /// The rx queue's interrupt descriptor (rte_eth_dev_rx_intr_ctl_q_get_fd), or -1 when
    /// the port has none. Watch it edge-triggered (EPOLLET) and never read it: on some
    /// drivers it is the queue itself (net_tap's tap descriptor), and reading would take a
    /// frame; an edge comes with every frame that arrives while the queue is armed.
    int rx_interrupt_fd() const { return rx_intr_fd_; }
    /// Why rx_interrupt_fd() is -1 ("not asked for", "the driver has none").
    const std::string& rx_interrupt_why() const { return rx_intr_why_; }
    /// Arms and disarms the queue's interrupt (rte_eth_dev_rx_intr_enable/disable): once
    /// per idle period, never per frame. Nothing to do on drivers whose descriptor is
    /// always live (their enable answers ENOTSUP).
    void arm_rx_interrupt();
    void disarm_rx_interrupt();

  private:
    port() = default;
    status setup(const port_config& config);
    void find_rx_interrupt();

    uint16_t id_ = 0;
    std::string name_, driver_;
    bool probed_     = false;  // our vdev: removed on close
    bool configured_ = false, started_ = false;
    size_t mtu_ = 0;
    rte_ether_addr mac_{};
    rte_mempool* pool_       = nullptr;
    int rx_intr_fd_          = -1;
    bool rx_intr_switch_     = false;  // enable/disable needed (not an always-live descriptor)
    std::string rx_intr_why_ = "not asked for";
};

/// The vdev string of a memif port named `name` ("net_memif..."): its role, interface id and
/// abstract socket "/SOCKET"; a ring of LOOM_DPDK_RING slots, each buffer holding a whole
/// frame of LOOM_DPDK_MTU (DPDK 22.11's memif lost and mixed up frames that spanned
/// buffers, under load both ways: docs/drivers/dpdk.md). `abstract` false: SOCKET is a file
/// path (the DPU ports, whose sockets live in a directory only the job can enter).
std::string memif_vdev(const std::string& name, const std::string& socket, bool server, int64_t id,
                       bool abstract = true);

}  // namespace loom::drivers::dpdk
