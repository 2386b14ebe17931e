// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/ofi: the datagram endpoint over libfabric (datagram.hh's "ofi:").
//
// One libfabric endpoint (a "hub") per listener and per connecting side. FI_EP_DGRAM where
// the provider has it with messages as large as a frame, else FI_EP_RDM messages (udp's
// datagrams stop at 1472 bytes, so "ofi:udp" runs over udp;ofi_rxd). A listener's hub hears
// every peer; frames are told apart by the peer number in their header, which the listener
// hands out in answer to a peer's hello (the hello carries the peer's fabric address, which
// the listener inserts into its address vector). A frame naming no peer that said hello is
// dropped and counted.
//
// Wire form: an 8-byte header {magic 'L', version, kind, 0, peer (4 bytes big-endian)}, then
// the frame (data), a fabric address (hello, welcome) or nothing.
//   hello      client -> listener, until a welcome comes (resent while it does not)
//   welcome    listener -> client, the header's peer field is the client's number, then
//              the client's fabric address (a welcome for another address is not taken)
//   data       either way, the header's peer field is the client's number
//   keepalive  either way, after a quarter of the idle timeout without sending
//   goodbye    either way, when an endpoint is destroyed
//
// A peer is gone after its goodbye, a send to it that the provider failed, or silence for
// LOOM_OFI_DATAGRAM_IDLE_TIMEOUT. Providers report a dead peer, if at all, on a send after their
// own retries (seconds); keep-alives make those sends, and go only from an endpoint's send()
// and recv(), so a side that stops polling falls silent too.
//
// No allocation and no blocking call per frame: receives go into buffers posted once (each
// handed out in place and reposted at the next recv), sends are copied into a fixed pool of
// send slots freed by their completions; no free slot drops the frame and counts it.
// Not thread-safe: the endpoints accepted from one listener share its hub, so one poll loop
// owns the listener and all of them.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "drivers/datagram_internal.hh"
#include "drivers/ofi/ofi_fabric.hh"

namespace loom::drivers::ofi::dgram {

constexpr size_t header_bytes    = 8;
constexpr size_t max_message     = header_bytes + datagram_max_frame;
constexpr size_t max_address     = 256;  // a fabric address in a hello (sockaddr, shm name)
constexpr uint8_t wire_magic     = 'L';
constexpr uint8_t wire_version   = 1;
constexpr uint32_t receive_count = 256;            // buffers posted per hub
constexpr uint32_t send_slots    = 128;            // sends in flight per hub
constexpr uint32_t peer_queue    = receive_count;  // frames waiting per peer: all, at most

enum class kind : uint8_t { hello = 1, welcome = 2, data = 3, keepalive = 4, goodbye = 5 };

/// What happened to a peer, as its endpoint sees it.
struct peer_state {
    std::string raw;  // its fabric address
    fi_addr_t fi        = FI_ADDR_NOTAVAIL;
    uint32_t number     = 0;      // its number on the wire (0: none yet, client side)
    bool accepted       = false;  // handed out by accept()
    bool closed         = false;  // its endpoint was destroyed: frames naming it are strangers
    bool gone           = false;  // said goodbye, or the provider reported a failed send
    double last_heard_s = 0, last_sent_s = 0;
    // Received frames waiting: buffer indices, [head, tail) modulo peer_queue.
    uint32_t queue[peer_queue] = {};
    uint32_t head = 0, tail = 0;
    uint32_t held      = UINT32_MAX;  // the buffer handed out by the last recv()
    uint32_t in_flight = 0;           // its sends not completed yet
    datagram_stats stats;
};

/// One libfabric endpoint and the peers it talks to.
class hub {
  public:
    /// Opens an endpoint of `provider` ("" = LOOM_OFI_PROVIDER, else the best available):
    /// FI_EP_DGRAM where its datagrams carry max_message bytes, else FI_EP_RDM.
    /// `listening`: peers say hello to it; else it talks to the one peer it connects to.
    static result<std::shared_ptr<hub>> open(std::string_view provider, bool listening);
    ~hub();

    /// "ofi:PROVIDER/HEX" where peers reach this endpoint.
    std::string address() const { return address_; }
    const std::string& provider() const { return provider_; }
    /// "dgram" (the provider's datagrams) or "rdm" (its reliable messages).
    const char* endpoint_type() const {
        return fabric_->info()->ep_attr->type == FI_EP_DGRAM ? "dgram" : "rdm";
    }
    std::string raw_address() const { return raw_; }

    /// Connecting side: the one peer, at fabric address `raw`; its number comes with the
    /// welcome.
    result<uint32_t> add_listener_peer(const std::string& raw);
    void send_hello(uint32_t peer);

    /// Reads completions: frames to their peers' queues, hellos to new peers, sends done.
    void progress();
    /// A peer that said hello and was not handed out yet, or UINT32_MAX.
    uint32_t next_unaccepted();
    /// The listener is gone: later hellos are strangers' (nobody would accept them).
    void stop_accepting() { accepting_ = false; }

    void send(uint32_t peer, kind k, const uint8_t* payload, size_t len);
    bool recv(uint32_t peer, const uint8_t** frame, size_t* len);
    /// Not gone, not closed, and heard from within the idle timeout where that applies.
    bool alive(uint32_t peer);
    /// Sends a keep-alive where a quarter of the idle timeout passed without sending.
    void keep_alive(uint32_t peer);
    /// The endpoint of `peer` is going: a goodbye, and frames naming it are strangers.
    void close_peer(uint32_t peer);
    /// Waits (bounded) until no send is in flight, so a goodbye leaves before the hub closes.
    void drain_sends(double timeout_s);

    peer_state& peer(uint32_t i) { return peers_[i]; }
    const peer_state& peer(uint32_t i) const { return peers_[i]; }
    uint64_t strangers() const { return strangers_; }

    // The waker (drivers/waker.hh), on the completion queue's wait fd where it has one.
    bool can_wait() const { return wait_fd_ >= 0; }
    uint64_t arm_sleep(uint32_t peer);
    void sleep(uint64_t token, int64_t timeout_ns);

  private:
    struct alignas(64) buffer {
        fi_context2 context;  // first: the completion's op_context points here
        uint32_t index;
        bool is_send;
        uint32_t peer;
        uint32_t length;  // a received frame's, past the header
        uint8_t bytes[max_message];
    };

    hub(std::unique_ptr<fabric> f, bool listening);
    status setup();
    void post_receive(uint32_t index);
    void repost();
    void on_received(buffer& b, size_t len);
    void on_hello(const uint8_t* raw, size_t len);
    void on_send_failed(buffer& b);
    bool post_send(uint32_t peer, kind k, const uint8_t* payload, size_t len);

    std::unique_ptr<fabric> fabric_;
    std::string provider_;
    bool listening_;
    uint32_t queue_cap_;  // frames one peer may hold: a listener's slow reader leaves half
    std::string raw_, address_;
    std::unique_ptr<buffer[]> buffers_;  // receive_count receives, then send_slots sends
    fid_mr* mr_ = nullptr;               // where the provider wants local buffers registered
    void* desc_ = nullptr;
    std::vector<uint32_t> free_sends_;
    std::vector<uint32_t> unposted_;  // receive buffers the provider had no room for yet
    std::deque<peer_state> peers_;    // a deque: a hello adds one while others are referenced
    std::unordered_map<std::string, uint32_t> by_address_;
    uint32_t accepted_upto_ = 0;
    bool accepting_         = true;
    uint64_t strangers_     = 0;
    int wait_fd_            = -1;
    int64_t max_sleep_ns_   = INT64_MAX;  // manual-progress providers need polling
    double idle_timeout_s_;
    double silent_after_s_;  // a peer silent this long is gone (HUGE_VAL: never)
    double keep_alive_s_;    // sent after this long without sending
};

/// The datagram endpoint of one peer of a hub.
std::unique_ptr<datagram_endpoint> peer_endpoint(std::shared_ptr<hub> h, uint32_t peer);

}  // namespace loom::drivers::ofi::dgram
