// SPDX-License-Identifier: Apache-2.0
// A frame link: one way for bounded, unreliable frames toward one or more peers, the lower
// half of a reliable endpoint built on frames (drivers/reliable). A DPDK port (drivers/dpdk)
// is one: frames are Ethernet frames, the link adds and strips the Ethernet header. A
// datagram endpoint (datagram.hh) is another, which lets the same protocol run between
// processes over shm or tcp datagrams with the fault injector in between.
//
// Frames may be lost, duplicated or reordered; one that arrives is whole (the link drops
// truncated ones and counts them). The link neither retransmits nor orders: that is the
// protocol's job above it.
//
// Fast path: send() and recv() never allocate, lock or block; a link may hold sends back in
// a burst and hand them to the wire at flush() (DPDK: rte_eth_tx_burst once per poll pass).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::drivers::common {

/// One received frame: its bytes after the link's own encapsulation.
struct frame_view {
    const uint8_t* data = nullptr;
    size_t len          = 0;
};

class frame_link {
  public:
    virtual ~frame_link() = default;
    /// The largest frame (head + body) send() carries, after the link's own encapsulation.
    virtual size_t mtu() const = 0;
    /// Sends one frame gathered from `head` (hlen bytes) then `body` (blen bytes, may be 0).
    /// False, with nothing sent, when the way out is full (the caller retries later) or the
    /// frame is over mtu(). The bytes are copied before it returns.
    virtual bool send(const void* head, size_t hlen, const void* body, size_t blen) = 0;
    /// Hands held-back sends to the wire (once per poll pass).
    virtual void flush() {}
    /// Up to `max` frames that arrived, into `out`; 0 when none. The views stay valid until
    /// the next recv() call on this link.
    virtual int recv(frame_view* out, int max) = 0;
    /// False once the other end of the link is known gone (a closed socket, a port whose
    /// link went down for longer than the link allows).
    virtual bool alive() const = 0;
    /// "dpdk port 0 (net_memif0)" and the like, for diagnostics.
    virtual std::string describe() const = 0;

    /// A descriptor that turns readable (watch it edge-triggered, never read it) when a
    /// frame arrives while armed, or -1: a link without one leaves its caller napping. The
    /// reliable endpoint builds its waker on these (a DPDK port's rx interrupt).
    virtual int rx_event_fd() const { return -1; }
    /// Arms and disarms that descriptor: once per idle period, never per frame.
    virtual void arm_rx_event() {}
    virtual void disarm_rx_event() {}
};

}  // namespace loom::drivers::common
