// SPDX-License-Identifier: Apache-2.0
// The ofi driver: loom's reliable tagged endpoint over libfabric's reliable datagram
// endpoints (FI_EP_RDM), so one driver reaches what libfabric reaches: tcp, shared memory,
// udp, and on clusters verbs, EFA, Slingshot (cxi) and PSM.
//
// Files (docs/architecture.md#rule-file-names): ofi_fabric.cc (provider choice and the
// libfabric objects, shared with the datagram endpoint), ofi_memory.cc (registrations: the
// receive and send buffers, the registration cache's backend), ofi_endpoint.cc (open,
// connect, the fast-path entry points, cancel, close), ofi_progress.cc (the completion
// queue, the messages' handlers, failure), ofi_wait.cc (the waker).
//
// Wire. Every loom message starts as one libfabric tagged send of a 56-byte header
// {tag, imm, len, addr, key, kind, source rank, id} into one of the receive buffers each
// rank keeps posted (LOOM_OFI_RECV_BUFFERS of header + LOOM_OFI_EAGER_LIMIT bytes, libfabric
// tag 0; over tcp;ofi_rxm the limit follows rxm's bounce buffer, 64 KiB, so a message that
// rxm carries in one trip goes eagerly). A message of at most LOOM_OFI_EAGER_LIMIT bytes carries
// its payload behind the header (eager; the sender copies it into a registered send buffer, so the
// send completes at once; where header and payload fit the provider's inject size and nothing waits
// to be sent, fi_tinject takes them inline, with no send buffer and no completion). A larger one is
// a rendezvous: the header (RTS) announces the sender's buffer, registered through the registration
// cache (addr, key); the receiver, once its receive matches, reads it with one fi_read straight
// into its own buffer and answers FIN, which completes the send: one RMA, no intermediate copy.
// Without FI_RMA (or LOOM_OFI_RMA=off) the receiver posts a tagged receive of the user's buffer
// under a tag of its own (bit 63 set, so no header buffer matches it) and answers CTS with that
// tag; the sender sends the buffer to it.
//
// Matching is drivers/common/matcher.hh's, decided from the header: a receive whose length
// or immediate differs completes with LOOM_ERR_MISMATCH before any payload is copied (a
// rendezvous is answered NACK, which completes the send); messages that come first are kept
// (eager payloads copied out of the receive buffer, which is posted again at once;
// rendezvous requests as their header); control tags arrive as unsolicited completions.
// When no entry is left for an early arrival, its receive buffer is held until one is.
//
// Progress. poll() reads the completion queue (no allocation, lock or blocking call), then
// sends what waited for a send buffer, starts reads that waited for a registration, posts
// receive buffers again, and hands out completions in order. The waker sleeps on the
// completion queue's wait descriptor where the provider has one (tcp;ofi_rxm, net), else
// idle_waker() is null and callers nap.
//
// Failure. A completion-queue error on an operation toward a peer fails that peer: every
// operation toward it completes with LOOM_ERR_PEER_FAILURE. A closing endpoint says BYE to
// its peers first. A killed process says nothing, so a peer with operations waiting on it
// that has been silent for a while (0.25 s with a rendezvous under way, 2 s with receives
// only) is sent a PING: the provider then reports a send error, or (tcp;ofi_rxm, net: the
// connection cannot be made again) refuses the send with -FI_EAGAIN; a silent peer whose
// sends have been refused for 5 s has failed. A peer merely busy for longer than that is
// taken for dead: the price of not waiting forever.
//
// Cancel (the failure path). A send whose RTS is out is revoked: REVOKE goes to the
// receiver, and cancel() makes progress until the receiver answers (REVOKE_ACK, FIN or
// NACK): the provider serves an RMA read from the user's buffer while this rank makes
// progress, so cancel returns only once no read can come (the receiver must be polling; one
// silent for the timeout is failed, and its access to the buffer revoked). A receive read
// into when REVOKE comes completes with PEER_FAILURE and `withdrawn`. A receive being read
// into, or a send being sent without RMA, waits for its transfer to finish.
#pragma once

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/intrusive_list.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/matcher.hh"
#include "drivers/common/registration_cache.hh"
#include "drivers/driver.hh"
#include "drivers/ofi/ofi_fabric.hh"

namespace loom::drivers::ofi {

// ---- wire ----

enum class msg_kind : uint32_t {
    eager      = 1,   // header + payload
    rts        = 2,   // rendezvous: the sender's buffer is at addr/key (id: the send)
    fin        = 3,   // the receiver read it (id: the send)
    nack       = 4,   // the receive expects another length or imm: nothing read (id)
    control    = 5,   // unsolicited control notice (tag with control_tag_bit, imm)
    bye        = 6,   // the sender closed its endpoint
    cts        = 7,   // without RMA: send to the libfabric tag in addr (id: the send)
    revoke     = 8,   // the send with id was cancelled: do not read it
    revoke_ack = 9,   // the receiver will not read it (any more)
    ping       = 10,  // liveness probe, ignored
};

struct wire_header {
    uint64_t tag;
    uint64_t imm;
    uint64_t len;
    uint64_t addr;
    uint64_t key;
    uint32_t kind;
    uint32_t src;
    uint32_t id;
    uint32_t reserved;
};
static_assert(sizeof(wire_header) == 56, "the header is 56 bytes on the wire");
constexpr size_t header_bytes = sizeof(wire_header);
// Receive buffers take every tag without this bit; direct (no-RMA) receives carry it.
constexpr uint64_t direct_tag_bit = uint64_t{1} << 63;
// Eager payloads up to this size may go inline (fi_tinject), where the provider's inject
// size allows (tcp;ofi_rxm: 64 bytes, the header and 8; net: 128; shm: 4096; not rxd).
constexpr size_t max_inject_payload = 4096;

// ---- registrations (ofi_memory.cc) ----

/// The registration cache's backend: fi_mr_reg for local and remote access.
class mr_backend {
  public:
    using handle = fid_mr*;
    explicit mr_backend(fabric* f) : fabric_(f) {}
    mr_backend(const mr_backend&)            = delete;
    mr_backend& operator=(const mr_backend&) = delete;
    result<handle> add(void* base, size_t len);
    void remove(handle& h);

  private:
    fabric* fabric_;
    uint64_t next_key_ = 1;  // where the application picks keys (no FI_MR_PROV_KEY)
};
using mr_cache = common::registration_cache<mr_backend>;

/// A registered block of equal buffers (the receive and send buffers).
struct buffer_block {
    char* base  = nullptr;
    size_t each = 0;
    size_t n    = 0;
    fid_mr* mr  = nullptr;
    void* desc  = nullptr;
    char* at(size_t i) const { return base + i * each; }
};
result<buffer_block> register_block(fabric& f, size_t each, size_t n);
void release_block(buffer_block& b);

// ---- operations ----

/// What a libfabric operation's context is, so a completion finds its owner.
enum class ctx_kind : uint8_t { recv_buffer, send_buffer, op };
struct ofi_ctx {
    fi_context2 fi;  // first: libfabric's context is the address of this
    ctx_kind kind;
    uint32_t index;
};

enum class op_state : uint8_t {
    idle,
    posted,          // a receive in peer::match.posted
    awaiting_fin,    // a rendezvous send whose RTS is out (peer::active)
    reading,         // a receive whose fi_read runs (peer::active)
    awaiting_start,  // a receive whose read waits for a registration or queue space
    direct_recv,     // without RMA: a receive whose tagged receive is posted, CTS sent
    direct_send,     // without RMA: a send whose tagged send to the CTS's tag runs
};

struct op : common::match_op<op> {
    ofi_ctx ctx{};
    op_state state       = op_state::idle;
    bool is_send         = false;
    bool revoked         = false;  // receive: the sender revoked the message being read
    mr_cache::region* mr = nullptr;
    uint64_t remote_addr = 0;
    uint64_t remote_key  = 0;
    uint32_t remote_id   = 0;  // receive: the sender's send id
    uint32_t gen         = 0;  // direct receives: part of their libfabric tag
};

/// A message that came before its receive.
struct early {
    early* next   = nullptr;
    early* prev   = nullptr;
    uint64_t tag  = 0;
    uint64_t imm  = 0;
    uint64_t len  = 0;
    msg_kind kind = msg_kind::eager;
    uint64_t addr = 0, key = 0;  // rts
    uint32_t send_id = 0;        // rts
    std::vector<char> payload;   // eager: grown once per entry, then reused
};

struct peer {
    int rank           = -1;
    bool connected     = false;
    bool failed        = false;
    bool heard         = false;  // a message came from it (connect waits for one)
    fi_addr_t addr     = FI_ADDR_UNSPEC;
    double last_heard  = 0;  // steady seconds of the last message from it
    double last_ping   = 0;
    double stuck_since = 0;  // a send to it has met -FI_EAGAIN since then (0: none)
    common::match_lists<op, early> match;
    intrusive_list<op> active;  // sends awaiting FIN, receives reading or waiting
    status error;
};

/// A message waiting for a send buffer (internal ones: buffer -1, the header kept here) or
/// for the provider's queue (its bytes in send buffer `buffer`).
struct outgoing {
    int peer;
    int32_t buffer;
    size_t bytes;
    wire_header h;
};

struct settings {
    std::string provider;
    size_t eager_limit  = 0;
    size_t send_queue   = 0;
    size_t recv_buffers = 0;
    size_t max_messages = 0;
    size_t mr_cache     = 0;
    bool rma_allowed    = true;
};
result<settings> settings_from_params(int rank);

// ---- the endpoint ----

class ofi_endpoint final : public endpoint {
  public:
    static result<std::unique_ptr<ofi_endpoint>> create(const endpoint_config& config);
    ~ofi_endpoint() override;

    caps capabilities() const override;
    status connect() override;
    const fast_path& fast() const override { return fast_; }
    void close() override;
    waker idle_waker() override;

    /// The provider in use ("tcp;ofi_rxm"), after create().
    std::string provider() const { return fabric_->provider(); }
    /// Large messages go by RMA read (else by a clear-to-send and a tagged send).
    bool uses_rma() const { return rma_; }
    bool has_wait_fd() const { return fabric_->wait_fd() >= 0; }
    const status& peer_status(int peer) const;
    const mr_cache& registrations() const { return cache_; }

    // Fast path.
    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const { return match_.pending() || loop_->pending(); }
    bool cancel(uint64_t cookie);
    // The waker (ofi_wait.cc).
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);
    void ring();

  private:
    ofi_endpoint(const endpoint_config& config, settings s);
    status open_fabric();
    status greet_peers();

    // ofi_progress.cc
    void progress();
    void handle_cq_entry(const fi_cq_tagged_entry& e);
    void handle_cq_error();
    /// A header buffer filled: true when it was handled (else held until entries free up).
    bool handle_message(uint32_t buffer, size_t len);
    /// An early-arrival entry for a message no receive has yet (a contradicting receive
    /// completes as a mismatch), or null when the pool is empty.
    early* keep_early(peer& p, const wire_header& h, msg_kind kind);
    bool handle_eager(peer& p, const wire_header& h, const char* payload);
    bool handle_rts(peer& p, const wire_header& h);
    void handle_answer(peer& p, const wire_header& h);  // fin, nack, revoke_ack
    void handle_cts(peer& p, const wire_header& h);
    void handle_revoke(peer& p, const wire_header& h);
    /// Receive `o` met the rendezvous of `h` (or early arrival `e`'s): read, or mismatch.
    void match_rendezvous(peer& p, op* o, uint64_t imm, uint64_t len, uint64_t addr, uint64_t key,
                          uint32_t send_id);
    void start_transfer(peer& p, op* o);
    void finish_read(op* o, bool ok);
    void cancelled_direct_recv(op* o);
    void repost_buffer(uint32_t i);
    void flush_outgoing();
    void start_waiting();
    void check_liveness();
    /// Queues an internal message to `peer` (sent now where a buffer is free).
    void send_internal(int peer, msg_kind kind, uint64_t tag, uint64_t imm, uint32_t id,
                       uint64_t addr = 0);
    /// Sends a header (+ payload) from a send buffer, now or, behind what waits, from
    /// progress: 0, or -FI_EAGAIN when a payload finds no free send buffer.
    int send_header(int peer, const wire_header& h, const void* payload, size_t len);
    /// Hands an eager message to the provider inline (fi_tinject: copied before it returns,
    /// no completion, no send buffer): true when taken. Only where nothing waits to be sent
    /// (order) and it fits the provider's inject size.
    bool inject_eager(int peer, const wire_header& h, const void* payload, size_t len);
    /// Every operation toward `p` completes with PEER_FAILURE; `graceful`: it said goodbye.
    void fail_peer(peer& p, const std::string& why, bool graceful = false);
    void complete_op(op* o, loom_status_t st, size_t bytes);
    op* op_of(uint32_t id, const wire_header& h);
    wire_header header(msg_kind kind, uint64_t tag, uint64_t imm, uint64_t len, uint32_t id) const;
    // ofi_endpoint.cc
    bool cancel_send(op* o);
    bool cancel_recv(op* o);
    /// Progress until `done` or the peer fails (true), or `seconds` pass (false).
    template <class Done>
    bool progress_until(peer& p, double seconds, Done done);

    endpoint_config config_;
    settings settings_;
    std::unique_ptr<fabric> fabric_;
    bool rma_ = false;
    fast_path fast_{};
    std::vector<peer> peers_;
    std::vector<int> peer_ranks_;
    common::matcher<op> match_;
    common::slab<early> earlies_;
    std::unique_ptr<common::loopback> loop_;
    std::unique_ptr<mr_backend> backend_;
    mr_cache cache_;
    buffer_block recv_block_, send_block_;
    std::vector<ofi_ctx> recv_ctx_, send_ctx_;
    std::vector<uint32_t> free_sends_;
    std::vector<int> send_peer_;    // by send buffer: its peer (for errors)
    std::vector<uint32_t> repost_;  // receive buffers to post again
    // Receive buffers (and their lengths) waiting for an early entry, oldest first.
    std::vector<std::pair<uint32_t, size_t>> held_;
    std::vector<outgoing> outgoing_;  // internal messages waiting for a send buffer
    size_t outgoing_head_ = 0;
    intrusive_list<op> waiting_;  // receives whose transfer waits to start
    size_t inject_limit_ = 0;     // header + payload bytes fi_tinject takes (0: never)
    uint32_t gen_        = 0;
    uint32_t polls_      = 0;
    int bell_fd_         = -1;  // ofi_wait.cc: rung by another thread
    bool connected_      = false;
    bool closed_         = false;
    status ok_;
};

}  // namespace loom::drivers::ofi
