// SPDX-License-Identifier: Apache-2.0
// The datagram endpoint: the second kind of endpoint a driver may offer, beside the reliable
// tagged one of driver.hh. For protocols that do their own recovery (in-network aggregation's
// retransmission and duplicate handling): a frame of at most datagram_max_frame bytes arrives
// whole or not at all, frames may be lost, duplicated (fault: only) or reordered, and a full
// way drops (and counts) rather than blocks.
//
// Addresses name the transport; drivers/datagram_registry.cc is the only place that knows
// the names:
//   tcp:HOST:PORT        a TCP connection; each frame travels as a 4-byte big-endian length,
//                        then the frame, so boundaries survive the stream (drivers/tcp)
//   shm:NAME             same host: a sealed memfd segment per connection holding two
//                        single-producer/single-consumer rings of frame slots, and a Unix
//                        stream socket NAME (abstract namespace) for the hand-shake and to
//                        see the other side go (drivers/shm)
//   ofi:PROVIDER/ADDRESS a libfabric endpoint of PROVIDER ("udp;ofi_rxd", "tcp;ofi_rxm", …)
//                        at ADDRESS, its fabric address in hex; listening takes ofi:PROVIDER
//                        (or ofi: for the best available) and address() gives the whole
//                        form. One endpoint hears every peer of a listener: a peer says
//                        hello with its own address first, and frames are told apart by the
//                        number the listener's welcome gave it (drivers/ofi/ofi_datagram.hh)
//   dpdk:memif:NAME[:ID] a DPDK memif port pair over the abstract socket "/loom-memif-NAME":
//                        one Ethernet frame (EtherType 0x88B5) per frame. A listener offers
//                        interface ids 0..LOOM_DPDK_MEMIF_IDS-1, one client each; a client
//                        names its id, or is given a free one (drivers/dpdk)
//   dpdk:af_packet:IFACE a DPDK af_packet port on kernel interface IFACE: frames to broadcast
//                        until the peer is heard; a listener hands out its one port once
//   fault:ADDRESS        the endpoint at ADDRESS with its sends dropped, duplicated and
//                        reordered by LOOM_FAULT_* (drivers/fault; connect only)
//
// Fast path: send() and recv() never allocate or block; tcp makes non-blocking socket calls,
// shm none, ofi non-blocking libfabric calls on buffers posted once, dpdk rx/tx bursts on mbufs
// from a pool. Not thread-safe: one poll loop
// owns an endpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.hh"
#include "drivers/waker.hh"

namespace loom::drivers {

/// The largest frame any datagram endpoint carries (the in-network aggregation packet: a
/// 56-byte header and 8 KiB of payload; inc/client/client.hh checks the sum). Part of the
/// wire contract of tcp and shm: the shm slot size derives from it, and a tcp frame length
/// above it closes the connection.
constexpr size_t datagram_max_frame = 56 + 8192;

struct datagram_stats {
    uint64_t sent = 0, received = 0;
    uint64_t send_dropped = 0;  // the peer's queue (or the socket buffer) was full
    uint64_t bytes_sent = 0, bytes_received = 0;
    uint64_t bad_frames   = 0;  // a frame length over datagram_max_frame (tcp: the link closes)
    uint64_t recv_dropped = 0;  // arrived while the reader's queue was full (ofi)
};

/// Where frames go: the sending half, all a protocol's sender needs.
class datagram_sink {
  public:
    virtual ~datagram_sink() = default;
    /// Queues one frame (at most datagram_max_frame bytes). Drops it (counted) when the way
    /// is full, the frame too large or the endpoint down.
    virtual void send(const uint8_t* frame, size_t len) = 0;
};

class datagram_endpoint : public datagram_sink {
  public:
    /// The next frame that arrived: true and *frame/*len set (valid until the next recv), or
    /// false when none is waiting. The bytes are as they came: the protocol checks them.
    virtual bool recv(const uint8_t** frame, size_t* len) = 0;
    /// False once the other side closed or died (detected by recv/send or the socket).
    virtual bool alive() const = 0;
    /// "tcp:10.0.0.1:7000 (fd 5)" and the like, for diagnostics.
    virtual std::string describe() const        = 0;
    virtual const datagram_stats& stats() const = 0;
    /// How a poll loop sleeps until a frame may have arrived (drivers/waker.hh); null where
    /// nothing can wake it (the loop naps). Ends early when the way out frees up too.
    virtual waker idle_waker() { return {}; }
};

/// The accepting side: hands out endpoints as peers connect.
class datagram_listener {
  public:
    virtual ~datagram_listener() = default;
    /// A newly connected endpoint, or null when none is waiting (never blocks).
    virtual std::unique_ptr<datagram_endpoint> accept() = 0;
    /// The address peers connect to (tcp port 0 is replaced by the port chosen).
    virtual std::string address() const = 0;
    /// Frames dropped because they named no peer that said hello (ofi, where one endpoint
    /// hears every peer: a stranger's frames, or a peer's after its endpoint closed).
    virtual uint64_t strangers() const { return 0; }
};

/// Connects to a listener at `address` (above), giving up after timeout_s with
/// LOOM_ERR_TIMEOUT and an error naming the address.
result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view address,
                                                            double timeout_s);

/// Listens at `address` ("tcp:HOST:PORT", port 0 = any free port; "shm:NAME";
/// "ofi:PROVIDER"; "dpdk:memif:NAME"; "dpdk:af_packet:IFACE").
result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view address);

/// The fault injector (drivers/fault) around `inner`: its sends dropped, duplicated and
/// reordered with these probabilities, decided by the splitmix64 stream `seed` (fault.hh).
/// Receives, alive(), describe() (" (lossy)" appended) and stats are the inner endpoint's.
std::unique_ptr<datagram_endpoint> lossy_datagram(std::unique_ptr<datagram_endpoint> inner,
                                                  double drop, double dup, double reorder,
                                                  uint64_t seed);

}  // namespace loom::drivers
