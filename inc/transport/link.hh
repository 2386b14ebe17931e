// Packet links between endpoints and aggregation nodes (loom-switch), libfabric-style: one
// interface, one provider per transport.
//
//   tcp:HOST:PORT   a TCP connection; each packet travels as one frame (a 4-byte big-endian
//                   length, then the packet), so packet boundaries survive the stream
//   shm:NAME        same host: a shared-memory segment per connection holding two
//                   single-producer/single-consumer rings of packet slots (one each way);
//                   a Unix stream socket named NAME (abstract namespace) carries the
//                   hand-shake and tells either side when the other is gone
//
// Links are datagram-like, as the inc protocol expects: a packet arrives whole or not at
// all, and a full queue drops (and counts) rather than blocks: the client retransmits and
// the aggregator resends, so a drop costs time, never correctness. Loss, duplication and
// reordering are injected by lossy_link (the fault driver's parameters).
//
// Fast path: send() and recv() never allocate or block; tcp makes non-blocking socket
// calls, shm none. Not thread-safe: one poll loop owns a link.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.hh"
#include "inc/client/client.hh"

namespace loom::inc {

struct link_stats {
    uint64_t sent = 0, received = 0;
    uint64_t send_dropped = 0;  // the peer's queue (or the socket buffer) was full
    uint64_t bytes_sent = 0, bytes_received = 0;
    uint64_t bad_frames = 0;  // a frame length over the largest packet (tcp: the link closes)
};

class link : public uplink {
  public:
    ~link() override = default;
    /// Queues one packet (≤ header_bytes + max_payload_bytes). Drops it (counted) when the
    /// way is full or the link is down.
    void send(const uint8_t* packet, size_t len) override = 0;
    /// The next packet that arrived: true and *packet/*len set (valid until the next recv),
    /// or false when none is waiting. The bytes are as they came: parse() them.
    virtual bool recv(const uint8_t** packet, size_t* len) = 0;
    /// False once the other side closed or died (detected by recv/send or the socket).
    virtual bool alive() const = 0;
    /// "tcp:10.0.0.1:7000 (fd 5)" and the like, for diagnostics.
    virtual std::string describe() const    = 0;
    virtual const link_stats& stats() const = 0;
};

/// Connects to a node listening at `address` ("tcp:HOST:PORT" or "shm:NAME"), giving up
/// after timeout_s with LOOM_ERR_TIMEOUT / an error naming the address.
result<std::unique_ptr<link>> connect_link(std::string_view address, double timeout_s);

/// The node side: accepts links.
class listener {
  public:
    virtual ~listener() = default;
    /// A newly connected link, or null when none is waiting (never blocks).
    virtual std::unique_ptr<link> accept() = 0;
    /// The address clients connect to (tcp port 0 is replaced by the port chosen).
    virtual std::string address() const = 0;
};

/// Listens at `address` ("tcp:HOST:PORT", port 0 = any free port; "shm:NAME").
result<std::unique_ptr<listener>> listen_links(std::string_view address);

/// Wraps a link so its sends are dropped, duplicated or reordered with the fault driver's
/// probabilities (drivers/fault: LOOM_FAULT_DROP, _DUP, _REORDER, _SEED).
std::unique_ptr<link> lossy_link(std::unique_ptr<link> inner, double drop, double dup,
                                 double reorder, uint64_t seed);

}  // namespace loom::inc
