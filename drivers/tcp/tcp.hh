// SPDX-License-Identifier: Apache-2.0
// The tcp driver: one non-blocking TCP connection per peer pair, many messages in flight on
// each, large messages streamed from and into the user's buffers.
//
// Files (docs/architecture.md#rule-file-names): tcp_device.cc (settings, bind address, listen
// socket, socket options and per-peer rings), tcp_conn.cc (address publish, connect/accept
// handshake naming ranks), tcp_progress.cc (the non-blocking send and receive state machines),
// tcp_slot_pool.cc (the pool of early-arrival buffers; receives and early arrivals meet in
// drivers/common/matcher.hh), tcp_endpoint.cc (open, the fast-path entry points, failure, close).
//
// Connections. Rank i connects to every peer j > i; j accepts. The listen address is the
// one LOOM_TCP_ADDR names, else the IPv4 address of LOOM_TCP_IFACE, else the host's first
// non-loopback IPv4 address that is up, else 127.0.0.1; it is published in the kv_store as
// "tcp/<rank>" = "ip:port" (ephemeral port). A connect retries until the deadline (the peer
// may not listen yet); the handshake carries both ranks, the job size, a job hash and the
// protocol parameters, and a wrong, duplicate or inconsistent rank fails connect().
//
// Wire. Every frame is a 24-byte header {tag, imm, type|len} (little-endian) and, for eager
// and data frames, the payload. A message of at most LOOM_TCP_EAGER_LIMIT bytes goes as one
// eager frame; the receiver reads its payload into the posted receive (straight from the
// socket when 8 KiB or more remain, else through a 64 KiB staging buffer, so one recv() serves
// many small frames), or, when no receive is posted yet, into a buffer from the pool of early
// arrivals (size classes, grown only past the high-water mark, capped by
// LOOM_TCP_UNEXPECTED_BYTES; at the cap, or when LOOM_TCP_MAX_MESSAGES receives and early
// arrivals are held, reading that connection pauses until a receive takes one). A larger message is
// a rendezvous: the sender sends RTS {tag, len}; once the receive is posted the receiver answers
// CTS, and the sender writes a data frame from the user's buffer (writev/sendmsg), which the
// receiver reads into the user's buffer: no intermediate copy on either side, no memory held for
// large early arrivals, and a large message never blocks the messages behind it on the connection
// (the engine may post receives in any order). Matching follows drivers/common/loopback.hh: a
// message whose length or immediate differs from what its receive expects completes the receive
// with LOOM_ERR_MISMATCH and delivers nothing (an eager payload is read and dropped; a rendezvous
// answers NACK) while the send completes with LOOM_SUCCESS. A control tag (bit 63) goes as
// one header and arrives as an unsolicited completion. Sends to the own rank go through the
// loopback matcher (drivers/common).
//
// Progress. poll() writes every peer's queued frames (sendmsg over up to 64 iovecs, so
// thousands of small messages cost few system calls), then takes the readable sockets from one
// epoll_wait(0) and reads each up to 4 MiB. Nothing blocks; wait_fd() lets an idle caller
// sleep until there is work.
//
// Failure. EOF, ECONNRESET, EPIPE or a malformed frame fails the peer: every operation toward
// it completes with LOOM_ERR_PEER_FAILURE, later posts complete the same way, and an error
// line names the rank and the peer (peer_status() returns it). Early arrivals that were
// complete before the failure are still delivered.
//
// Cancel (driver.hh; the failure path, so it scans and may allocate). Tcp never revokes: a
// send the peer has not heard of (its first frame not started) is removed; one partly
// written, or whose RTS is out, goes on from a driver-owned copy of its unsent bytes (the
// whole message while the CTS is awaited) and completes silently. A posted receive nothing
// matched is removed; one being filled, whose CTS is out, or whose early eager payload is
// still arriving reads the rest into a sink. Neither touches the user's buffer again.
#pragma once

#include <endian.h>
#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/intrusive_list.hh"
#include "drivers/common/completion_ring.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/matcher.hh"
#include "drivers/driver.hh"
#include "drivers/tcp/tcp_slot_pool.hh"

namespace loom::drivers::tcp {

// ---- wire format ----

enum class frame_type : uint8_t {
    eager   = 1,  // header + payload
    rts     = 2,  // request to send a large message (no payload)
    cts     = 3,  // clear to send: the receive is posted (no payload)
    nack    = 4,  // the receive expects another length or immediate: drop the message
    data    = 5,  // header + payload of a message that got its CTS
    bye     = 6,  // the sender closed its endpoint
    control = 7,  // an unsolicited control notice (tag with control_tag_bit, imm only)
};

constexpr size_t header_bytes    = 24;
constexpr uint64_t max_frame_len = (uint64_t{1} << 56) - 1;  // the type takes the top byte
constexpr uint32_t hello_magic   = 0x4c4f4f4d;               // "LOOM"
constexpr uint16_t hello_version = 2;

inline void encode_header(uint8_t* out, frame_type type, uint64_t tag, uint64_t imm, uint64_t len) {
    uint64_t words[3] = {htole64(tag), htole64(imm),
                         htole64((uint64_t{uint8_t(type)} << 56) | len)};
    __builtin_memcpy(out, words, header_bytes);
}

struct header {
    uint64_t tag;
    uint64_t imm;
    uint64_t len;
    frame_type type;
};

inline header decode_header(const uint8_t* in) {
    uint64_t words[3];
    __builtin_memcpy(words, in, header_bytes);
    uint64_t last = le64toh(words[2]);
    return {le64toh(words[0]), le64toh(words[1]), last & max_frame_len, frame_type(last >> 56)};
}

// Control notices are rare (a call failed): a few may wait per peer for the socket, and a
// few may wait per endpoint for poll() to hand them out; beyond, sending answers
// NO_RESOURCE and receiving pauses that connection.
constexpr uint32_t control_frames_per_peer  = 64;
constexpr uint32_t control_completions_held = 256;

enum class hello_kind : uint16_t { hello = 0, accept = 1, reject = 2 };

/// Why an acceptor rejected a handshake (sent back so the connector can say it too).
enum class reject_reason : uint32_t {
    none = 0,
    wrong_job,
    wrong_size,
    wrong_rank,
    duplicate_rank,
    wrong_params,
};
const char* to_string(reject_reason r);

/// The handshake, both directions (fields little-endian on the wire, see to_wire()).
struct hello {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;  // hello_kind
    int32_t from_rank;
    int32_t to_rank;
    int32_t size;
    uint32_t eager_limit;
    uint32_t send_queue;
    uint32_t reason;  // reject_reason
    uint64_t job_hash;
};
static_assert(sizeof(hello) == 40, "the handshake is 40 bytes on the wire");
hello to_wire(hello h);
hello from_wire(hello h);
/// FNV-1a of the job name: a connection from another job is told apart from ours.
uint64_t job_hash(const std::string& job);

// ---- settings (tcp_device.cc) ----

struct settings {
    std::string bind_address;  // IPv4 dotted quad
    uint64_t eager_limit      = 0;
    uint32_t send_queue       = 0;  // per peer
    uint32_t max_messages     = 0;  // per endpoint: posted receives + early arrivals
    uint64_t unexpected_bytes = 0;  // pool cap for early arrivals
    int sockbuf_bytes         = 0;  // 0: kernel autotuning
};
/// Reads the LOOM_TCP_* parameters and resolves the bind address.
result<settings> settings_from_params(int rank);
/// A listening socket on `address`:0 and the "ip:port" it can be reached at.
result<int> listen_on(const std::string& address, int backlog, std::string* published, int rank);
/// Parses "ip:port" (as published) into a socket address.
bool parse_address(const std::string& text, sockaddr_in* out);

// ---- per-peer state (tcp_progress.cc) ----

/// One frame waiting to be written: its header, and the payload taken from the user's buffer.
struct frame {
    uint8_t hdr[header_bytes];
    const uint8_t* payload;
    uint64_t payload_len;
    uint64_t written;  // bytes of header + payload already accepted by the kernel
    int32_t desc;      // send descriptor that completes when this frame is out, or -1
    frame_type type;
};

struct send_desc {
    uint64_t tag;
    uint64_t imm;
    const void* buf;  // the user's buffer, or the driver's copy once withdrawn
    uint64_t len;
    uint64_t cookie;
    // cancel() took it back from the user: it finishes from the driver's copy
    // (peer::copies) and reports no completion.
    bool withdrawn = false;
    // A rendezvous send whose RTS went: listed in peer::awaiting_cts until the CTS comes.
    send_desc* next = nullptr;
    send_desc* prev = nullptr;
};

/// What a receive-side entry holds for a message, whichever of it and its receive came
/// first; the matcher's fields are the receive's (buf, len = the expected length, cookie)
/// and the message's tag and imm (posted: the imm expected).
enum class rx_kind : uint8_t {
    posted,         // a receive, nothing arrived yet: peer::match.posted
    early_eager,    // an eager message first: its payload goes to `slot` (peer::match.early
                    // until claimed; claimed while incomplete, only rx_state::entry has it)
    early_rts,      // a rendezvous request first: peer::match.early
    awaiting_data,  // the receive sent its CTS; the data frame lands in buf: awaiting_data
};
struct rx_entry : common::match_op<rx_entry> {
    rx_kind kind     = rx_kind::posted;
    bool complete    = false;  // early_eager: the whole payload is in the slot
    bool claimed     = false;  // early_eager: a receive was posted for it
    bool mismatch    = false;  // early_eager, claimed: that receive expects another length/imm
    uint8_t* slot    = nullptr;
    uint64_t msg_len = 0;  // the message's length
};

/// Where the payload being read goes.
enum class sink : uint8_t { none, user, slot, discard };

struct rx_state {
    sink kind          = sink::none;
    uint8_t* base      = nullptr;  // where the payload starts (identifies an early slot)
    uint8_t* dst       = nullptr;  // where the next byte goes
    uint64_t remaining = 0;
    uint64_t total     = 0;
    uint64_t tag       = 0;
    uint64_t imm       = 0;  // as it came
    uint64_t cookie    = 0;
    rx_entry* entry    = nullptr;  // sink::slot: the early arrival it fills
};

struct peer {
    int rank       = -1;
    int fd         = -1;
    bool connected = false;  // part of this endpoint's peer set and handshaken
    bool failed    = false;
    // Receives posted for this peer and its messages that came first, matched by tag.
    common::match_lists<rx_entry, rx_entry> match;
    intrusive_list<rx_entry> awaiting_data;  // receives whose CTS is out
    intrusive_list<send_desc> awaiting_cts;  // rendezvous sends whose RTS is out
    bool stalled   = false;                  // a header waits for entry or pool space
    bool watch_out = false;                  // EPOLLOUT is armed: frames wait for socket space
    status error;                            // why it failed, naming the peer
    // transmit: a ring of frames, capacity 2 x send_queue + control_frames_per_peer + 1:
    // each send descriptor has at most one frame queued, each CTS/NACK answers one of the
    // peer's sends, control notices are capped, and one goodbye
    std::vector<frame> wire;
    uint32_t wire_head = 0, wire_tail = 0, wire_mask = 0;
    std::vector<send_desc> descs;
    std::vector<uint32_t> free_descs;
    // By descriptor: the unsent bytes of a withdrawn send (sized at the first cancel).
    std::vector<std::unique_ptr<uint8_t[]>> copies;
    uint32_t sends_outstanding = 0;  // posted and not yet handed back by poll()
    uint32_t control_queued    = 0;  // control notices in the ring
    // receive: a staging buffer for headers and small payloads, then the current payload
    std::vector<uint8_t> staging;
    size_t rpos = 0, wpos = 0;
    rx_state rx;

    bool wire_empty() const { return wire_head == wire_tail; }
    bool wire_full() const { return wire_tail - wire_head > wire_mask; }
};

// ---- the self-ring of the waker (tcp_wait.cc) ----

/// An eventfd another thread of this process writes to end the endpoint's sleep (work
/// handed over to a sleeping progress thread). Without one (eventfd failed), ring() does
/// nothing and a sleep ends at its timeout.
class wake_event {
  public:
    wake_event();
    ~wake_event();
    wake_event(const wake_event&)            = delete;
    wake_event& operator=(const wake_event&) = delete;
    int fd() const { return fd_; }
    void ring();
    void clear();

  private:
    int fd_ = -1;
};

// ---- the endpoint (tcp_endpoint.cc) ----

class tcp_endpoint final : public endpoint {
  public:
    static result<std::unique_ptr<tcp_endpoint>> create(const endpoint_config& config);
    ~tcp_endpoint() override;

    caps capabilities() const override;
    status connect() override;
    const fast_path& fast() const override { return fast_; }
    void close() override;

    /// Why `peer` failed: ok while it has not; otherwise PEER_FAILURE with a message that
    /// names this rank and the peer.
    const status& peer_status(int peer) const;
    /// "ip:port" this rank listened on (after connect()).
    const std::string& listen_address() const { return published_; }
    /// An epoll descriptor that turns readable when poll() has work: a connection has data,
    /// or frames waiting for socket space can go. A caller that found nothing to do for a
    /// while may sleep in poll(2)/epoll_wait on it instead of napping (after connect(); -1
    /// when there are no peers). The own-rank loopback never needs it: its work is done
    /// inside post_send/post_recv.
    int wait_fd() const { return epoll_fd_; }

    // Fast path (static trampolines in tcp_endpoint.cc call these).
    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const { return active_ > 0 || !cq_.empty() || loop_->pending(); }
    /// Withdraws the operation with `cookie` (driver.hh): an unstarted send or an unmatched
    /// receive is removed; a send on the wire (or whose RTS is out) finishes from a copy of
    /// its unsent bytes; a receive being filled (or whose CTS is out) drains into a discard
    /// sink. No completion either way. False when no pending operation has `cookie`.
    bool cancel(uint64_t cookie);
    // The waker (tcp_wait.cc): sleeps on wait_fd() and on an eventfd that ring() writes.
    waker idle_waker() override;
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);
    void ring();

  private:
    tcp_endpoint(const endpoint_config& config, settings s);

    // tcp_conn.cc, tcp_device.cc
    status setup_connections();
    // tcp_progress.cc
    void flush(peer& p);
    void watch_writable(peer& p);
    void read_peer(peer& p);
    bool handle_header(peer& p, const header& h);
    bool handle_eager(peer& p, const header& h);
    /// A message of (tag, imm) arrived with no receive for its tag: an entry to keep it as
    /// an early arrival (null: none left). A receive of the same call with another
    /// immediate completes with LOOM_ERR_MISMATCH.
    rx_entry* take_early_entry(peer& p, const header& h, rx_kind kind);
    bool handle_rts(peer& p, const header& h);
    bool handle_cts(peer& p, const header& h, bool nack);
    bool handle_data(peer& p, const header& h);
    /// The payload of `h` goes into receive `e`'s buffer, or with `drop` nowhere; `e`, off
    /// every list, returns to the pool.
    bool take_payload(peer& p, const header& h, rx_entry* e, bool drop);
    void begin_payload(peer& p, sink kind, uint8_t* dst, uint64_t len, uint64_t tag, uint64_t imm,
                       uint64_t cookie, rx_entry* entry = nullptr);
    void consume_payload(peer& p, const uint8_t* src, uint64_t n);
    void finish_payload(peer& p);
    bool read_some(peer& p, uint64_t* budget, bool* drained);
    void stall(peer& p);
    bool enqueue(peer& p, frame_type type, uint64_t tag, uint64_t imm, uint64_t len,
                 const void* payload, int32_t desc);
    bool handle_control(peer& p, const header& h);
    loom_status_t send_control(peer& p, uint64_t tag, uint64_t imm);
    bool answer_rts(peer& p, rx_entry* e, uint64_t msg_len, uint64_t msg_imm);
    void advance_wire(peer& p, uint64_t sent);
    bool protocol_error(peer& p, const std::string& what);
    // tcp_endpoint.cc
    enum class cq_kind : uint8_t { send, recv, control };
    void complete(const completion& c, cq_kind kind);
    void complete_recv(int peer, uint64_t cookie, loom_status_t st, uint64_t bytes, uint64_t tag,
                       uint64_t imm);
    void complete_send(peer& p, uint32_t desc, loom_status_t st);
    bool cancel_recv(uint64_t cookie);
    bool cancel_send(uint64_t cookie);
    /// Takes descriptor `d` back from the user: `f` (its frame on the wire, or null for a
    /// rendezvous whose whole message is still to go) goes on from a copy.
    void withdraw_send(peer& p, uint32_t d, frame* f);
    /// Removes the unstarted frame at ring position `pos`.
    void remove_frame(peer& p, uint32_t pos);
    void deliver_early(rx_entry* e);
    void fail_peer(peer& p, const std::string& why, bool graceful = false);
    int fail_peer_entries(peer& p);
    void say_goodbye(peer& p);

    struct cq_entry {
        completion c;
        cq_kind kind;
    };

    endpoint_config config_;
    settings settings_;
    fast_path fast_{};
    std::vector<peer> peers_;         // indexed by rank; connected ones are the peer set
    std::vector<int> peer_ranks_;     // the connected ranks, for loops
    common::slab<rx_entry> entries_;  // LOOM_TCP_MAX_MESSAGES: receives and early arrivals
    slot_pool pool_;
    common::completion_ring<cq_entry> cq_;
    uint64_t active_            = 0;          // operations posted and not yet completed
    uint32_t recvs_outstanding_ = 0;          // posted and not yet handed back by poll()
    uint32_t controls_held_     = 0;          // unsolicited completions not yet handed out
    std::unique_ptr<common::loopback> loop_;  // peer == own rank
    int epoll_fd_      = -1;
    int stalled_count_ = 0;
    wake_event bell_;  // tcp_wait.cc
    std::string published_;
    bool closed_ = false;
    status ok_;
};

}  // namespace loom::drivers::tcp
