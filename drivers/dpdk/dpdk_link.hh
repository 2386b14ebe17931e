// SPDX-License-Identifier: Apache-2.0
// eth_link: a frame link (drivers/common/frame_link.hh) over one DPDK port: each frame is one
// Ethernet frame (dpdk_frame.hh). send() copies head and body into an mbuf from the port's
// pool behind the Ethernet header and keeps it in a burst, which flush() (or a full burst)
// hands to rte_eth_tx_burst; what the tx ring refuses is freed and counted, as a NIC drops.
// recv() is one rte_eth_rx_burst, its frames checked and given as views past the header;
// their mbufs go back to the pool at the next recv(). No allocation, lock or system call
// per frame: mbufs come from the pool, and the link's state is read at most every few
// milliseconds (an ioctl on af_packet).
#pragma once

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <string>

#include "drivers/common/frame_link.hh"
#include "drivers/dpdk/dpdk_port.hh"

namespace loom::drivers::dpdk {

struct link_stats {
    uint64_t frames_out = 0, bytes_out = 0;  // handed to the port (payload bytes)
    uint64_t frames_in = 0, bytes_in = 0;    // loom frames received (payload bytes)
    uint64_t drop_too_big    = 0;            // send() over mtu(): refused
    uint64_t drop_no_mbuf    = 0;            // send() with the pool empty: refused
    uint64_t drop_tx_full    = 0;            // the tx ring took less than the burst: freed
    uint64_t drop_wrong_type = 0;            // received, not EtherType 0x88B5
    uint64_t drop_runt       = 0;            // received, shorter than the Ethernet header
    uint64_t drop_too_long   = 0;            // received, longer than mtu()
    uint64_t control_in      = 0;            // the peer's control frames (hellos)
};

class eth_link final : public common::frame_link {
  public:
    explicit eth_link(std::unique_ptr<port> p);
    ~eth_link() override;
    eth_link(const eth_link&)            = delete;
    eth_link& operator=(const eth_link&) = delete;

    size_t mtu() const override { return port_->mtu(); }
    bool send(const void* head, size_t hlen, const void* body, size_t blen) override;
    void flush() override;
    int recv(common::frame_view* out, int max) override;
    bool alive() const override;
    std::string describe() const override { return port_->describe(); }
    // The port's rx interrupt, where its driver has one (dpdk_port.hh).
    int rx_event_fd() const override { return port_->rx_interrupt_fd(); }
    void arm_rx_event() override { port_->arm_rx_interrupt(); }
    void disarm_rx_event() override { port_->disarm_rx_interrupt(); }

    const link_stats& stats() const { return stats_; }
    port& device() { return *port_; }
    /// Where frames go before a peer has been heard from (broadcast) and after.
    bool peer_known() const { return peer_known_; }
    /// Sends a hello (a control frame, EtherType 0x88B6, never handed to the protocol):
    /// "my receive buffers are posted, send". A memif client says it once up, since its
    /// server's first frames would be dropped before then. False when it could not go.
    bool send_hello();
    /// True once anything came from the peer (a hello or a frame): it is ready to receive.
    bool peer_ready() const { return peer_known_; }

  private:
    std::unique_ptr<port> port_;
    link_stats stats_;
    rte_ether_addr peer_{};
    bool peer_known_ = false;
    rte_mbuf* tx_[burst_size]{};
    uint32_t tx_bytes_[burst_size]{};
    uint16_t tx_count_ = 0;
    rte_mbuf* rx_[burst_size]{};
    uint16_t rx_held_ = 0;
    // alive(): the link's state, read at most every check_tsc_ cycles.
    uint64_t check_tsc_ = 0, grace_tsc_ = 0;
    mutable uint64_t next_check_ = 0, down_since_ = 0;
    mutable bool gone_ = false;
};

}  // namespace loom::drivers::dpdk
