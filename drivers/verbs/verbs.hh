// SPDX-License-Identifier: Apache-2.0
// The verbs driver (rdma-core): one reliable-connected queue pair per peer, eager messages
// into pre-posted receive buffers, large messages by the receiver's clear-to-send and one
// RDMA write with immediate (the pattern of NCCL's IB transport).
//
// Files: verbs_api.cc (the call table: libibverbs, or a test's simulated HCA),
// verbs_device.cc (device, port and GID choice, protection domain, completion queue, the
// registered buffer rings, the registration cache's backend, dmabuf), verbs_qp.cc (queue
// pairs: connection data through the kv_store, RESET -> INIT -> RTR -> RTS),
// verbs_endpoint.cc (open, the fast path, matching, cancel, peer failure, close),
// verbs_progress.cc (the completion queue: arrivals, clear-to-send, writes, errors),
// verbs_wait.cc (the idle waker: the completion channel's descriptor and an eventfd).
//
// Connections. Each rank creates one RC queue pair per peer and publishes, for each, the
// key "verbs/<rank>/<peer>" = "<qpn>:<lid>:<gid>:<psn>" in the job's kv_store; it reads the
// peer's entry for itself and moves its queue pair to RTR and RTS. The receive buffers are
// posted before RTR, so nothing the peer sends can find the queue empty at start.
//
// Wire. Every message the driver sends (ibv SEND) starts with a 48-byte header (wire_header);
// an eager message (at most LOOM_VERBS_EAGER_LIMIT bytes) carries its payload behind it, copied
// into a registered send buffer. A larger message sends RTS {tag, imm, len, token}; the receiver,
// once a receive of that tag is posted and agrees on length and immediate, registers the
// receive's buffer (the registration cache: a buffer used again is not registered again)
// and answers CTS {token, addr, rkey, receive index}; the sender registers its buffer the
// same way and posts one RDMA write with immediate from its buffer into the receive's, the
// immediate naming the receive. The write's arrival completes the receive: the data went
// from user buffer to user buffer, once. A receive that expects another length or immediate
// completes with LOOM_ERR_MISMATCH from the header alone: an eager payload is dropped, an
// RTS is answered NACK (the send completes with LOOM_SUCCESS, as in drivers/common/loopback.hh).
//
// Receive buffers. LOOM_VERBS_RECV_DEPTH per peer, reposted as soon as their message is
// handled; an eager message that came before its receive is copied out (up to
// LOOM_VERBS_UNEXPECTED_BYTES), past that it stays in its buffer until the receive is posted.
// With every buffer taken, the sender's HCA retries (RNR retry, unbounded) until one is
// reposted: that is the back-pressure. Registered memory per peer: (LOOM_VERBS_RECV_DEPTH +
// 2 x LOOM_VERBS_SEND_QUEUE) x (48 + LOOM_VERBS_EAGER_LIMIT) bytes, about 5 MiB by default
// (the second half of the send buffers carries clear-to-send answers, so a rank that sends
// much never starves its answers to the peer).
//
// Close sends every live peer a goodbye, which fails this rank toward it at once: a peer
// waiting only on receives would otherwise not notice (RC reports a dead peer to the side
// that sends).
//
// Failure. A work completion with an error status (retry exceeded, remote access, flush)
// fails its peer: every operation toward it completes with LOOM_ERR_PEER_FAILURE, later posts
// complete the same way, and an error line names this rank, the peer and the status
// (ibv_wc_status_str).
//
// Cancel (driver.hh; the failure path). A send whose RTS is out goes on from a driver-owned
// copy of the message; a send whose payload was copied (eager) just finishes silently; a write
// in flight is waited for (the peer's HCA acknowledges it without software). A posted
// receive nothing matched is removed; one whose CTS is out waits for the write up to the
// connect timeout, after which its peer is failed (its queue pair to the error state, so no
// write can land later).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/intrusive_list.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/matcher.hh"
#include "drivers/common/registration_cache.hh"
#include "drivers/driver.hh"
#include "drivers/verbs/verbs_api.hh"

namespace loom::drivers::verbs {

// ---- wire format ----

enum class msg_type : uint32_t {
    eager   = 1,  // header + payload
    rts     = 2,  // a large message waits for its receive (no payload)
    cts     = 3,  // the receive is posted: write into addr/rkey, immediate = recv_index
    nack    = 4,  // the receive expects another length or immediate: drop the message
    control = 5,  // an unsolicited control notice (tag with control_tag_bit, imm only)
    bye     = 6,  // the sender closed its endpoint
};

/// Host byte order: both ends of a queue pair run this driver on hosts of one job, and
/// RDMA fabrics join like machines (a mixed-endian job is not supported).
struct wire_header {
    uint64_t tag;
    uint64_t imm;
    uint64_t len;
    uint64_t addr;        // cts: where the write goes
    uint32_t token;       // rts, cts, nack: the sender's operation
    uint32_t rkey;        // cts
    uint32_t type;        // msg_type
    uint32_t recv_index;  // cts: the receive the write's immediate names
};
static_assert(sizeof(wire_header) == 48, "the header is 48 bytes on the wire");

// ---- work request ids: what a completion belongs to ----

enum class wr_kind : uint64_t { recv = 1, send_buf = 2, write = 3 };
inline uint64_t wr_id_of(wr_kind k, int peer, uint32_t index) {
    return (uint64_t(k) << 60) | (uint64_t(uint32_t(peer)) << 32) | index;
}
inline wr_kind kind_of(uint64_t wr_id) {
    return wr_kind(wr_id >> 60);
}
inline int peer_of(uint64_t wr_id) {
    return int((wr_id >> 32) & 0x0fffffff);
}
inline uint32_t index_of(uint64_t wr_id) {
    return uint32_t(wr_id);
}

// ---- connection data (verbs_qp.cc) ----

/// What a peer needs to reach one of this rank's queue pairs.
struct conn_info {
    uint32_t qpn = 0;
    uint16_t lid = 0;
    ibv_gid gid{};
    uint32_t psn = 0;
};
std::string to_string(const conn_info& c);
bool parse_conn_info(const std::string& text, conn_info* out);

/// Where the queue pairs are addressed from (the port's attributes, chosen at open).
struct port_info {
    uint8_t port  = 1;
    int gid_index = -1;  // -1: address by LID
    uint16_t lid  = 0;
    ibv_gid gid{};
    ibv_mtu mtu = IBV_MTU_1024;
};

/// Moves `qp` RESET -> INIT (receives may be posted from then on); an error names `peer`.
status to_init(const verbs_api& api, ibv_qp* qp, const port_info& port, int rank, int peer);
/// Moves `qp` INIT -> RTR -> RTS toward `remote`; an error names `peer` and the step.
status to_rtr_rts(const verbs_api& api, ibv_qp* qp, const port_info& port, const conn_info& local,
                  const conn_info& remote, int rank, int peer);

// ---- registration (verbs_device.cc) ----

/// The registration cache's backend: ibv_reg_mr with local and remote write access.
struct mr_backend {
    using handle         = ibv_mr*;
    const verbs_api* api = nullptr;
    ibv_pd* pd           = nullptr;
    result<handle> add(void* base, size_t len);
    void remove(handle& h);
};
using mr_cache = common::registration_cache<mr_backend>;

// ---- operations ----

enum class op_state : uint8_t {
    recv_posted,    // a receive, nothing matched: peer::match.posted
    recv_awaiting,  // a receive whose CTS is out: the write lands in its buffer
    send_eager,     // copied into a send buffer, waiting for its send completion
    send_rts,       // RTS out, waiting for CTS or NACK
    send_writing,   // the RDMA write is posted
};

struct op : common::match_op<op> {
    op_state state       = op_state::recv_posted;
    mr_cache::region* mr = nullptr;  // the user buffer's registration (large messages)
    std::unique_ptr<char[]> copy;    // a cancelled send's message
    ibv_mr* copy_mr = nullptr;
};

/// A message that came before its receive.
struct early_msg {
    early_msg* next = nullptr;
    early_msg* prev = nullptr;
    uint64_t tag    = 0;
    uint64_t imm    = 0;
    uint64_t len    = 0;
    msg_type type   = msg_type::eager;
    uint32_t token  = 0;     // rts: the sender's operation
    int32_t slot    = -1;    // eager: the receive buffer holding it, or -1: copied into data
    std::vector<char> data;  // an eager payload copied out (its capacity is kept for reuse)
};

/// A CTS or NACK that found no free send buffer: sent on the next poll.
struct pending_reply {
    wire_header h;
};

struct peer {
    int rank    = -1;
    bool failed = false;
    ibv_qp* qp  = nullptr;
    conn_info local;
    common::match_lists<op, early_msg> match;
    // Send buffers [0, send_queue) take user messages, [send_queue, 2 x send_queue) replies.
    std::vector<uint32_t> free_sends;
    std::vector<uint32_t> free_replies;
    std::vector<pending_reply> replies_waiting;  // capacity reserved: no allocation
    uint32_t sends_outstanding = 0;  // send operations not yet completed (<= send_queue)
    uint32_t recv_base         = 0;  // this peer's first receive buffer in the ring
    uint32_t send_base         = 0;  // its first send buffer
};

// ---- the endpoint ----

/// Operations beyond LOOM_VERBS_MAX_OPS kept for the unsolicited completions of control
/// notices, so that a peer's notice is not lost while this rank's posts fill the pool.
constexpr uint32_t control_reserve = 256;

struct settings {
    std::string device;
    uint8_t port              = 1;
    int gid_index             = -1;
    uint64_t eager_limit      = 0;
    uint32_t recv_depth       = 0;
    uint32_t send_queue       = 0;
    uint32_t max_ops          = 0;
    uint32_t mr_cache         = 0;
    uint64_t unexpected_bytes = 0;
};
result<settings> settings_from_params();

class verbs_endpoint final : public endpoint {
  public:
    static result<std::unique_ptr<verbs_endpoint>> create(const endpoint_config& config,
                                                          const verbs_api& api);
    ~verbs_endpoint() override;

    caps capabilities() const override;
    status connect() override;
    const fast_path& fast() const override { return fast_; }
    void close() override;

    /// Why `peer` failed: ok while it has not.
    const status& peer_status(int peer) const;
    /// The device name the endpoint opened.
    const std::string& device_name() const { return device_name_; }
    /// Registers `len` bytes at `offset` of dmabuf `fd` (device memory a GPU driver
    /// exported) for RDMA; NOT_SUPPORTED when libibverbs or the device cannot.
    result<ibv_mr*> register_dmabuf(int fd, uint64_t offset, size_t len);
    void deregister(ibv_mr* mr);
    /// Whether this libibverbs has ibv_reg_dmabuf_mr.
    bool dmabuf_supported() const { return api_.reg_dmabuf_mr != nullptr; }
    /// The registration cache (its hit and miss counts).
    const mr_cache& registrations() const { return cache_; }

    // Fast path.
    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const { return match_.pending() || loop_->pending(); }
    bool cancel(uint64_t cookie);
    // The waker (verbs_wait.cc): sleeps on the completion channel and on an eventfd that
    // ring() writes. Null where the device gives no completion channel.
    waker idle_waker() override;
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);
    void ring();

  private:
    verbs_endpoint(const endpoint_config& config, settings s, const verbs_api& api);

    // verbs_device.cc
    status open_device();
    status create_rings();
    char* recv_buf(uint32_t slot) { return recv_ring_.get() + size_t(slot) * buf_bytes_; }
    char* send_buf(uint32_t slot) { return send_ring_.get() + size_t(slot) * buf_bytes_; }
    // verbs_qp.cc
    status create_queue_pairs();
    status exchange_and_connect();
    // verbs_progress.cc
    void progress();
    void on_completion(const ibv_wc& wc);
    void on_message(peer& p, uint32_t slot, uint32_t byte_len);
    void on_eager(peer& p, const wire_header& h, uint32_t slot);
    /// `h` found no receive: kept as an early arrival (eager: in receive buffer `slot`).
    void keep_early(peer& p, const wire_header& h, int32_t slot);
    void on_rts(peer& p, const wire_header& h);
    void on_cts(peer& p, const wire_header& h);
    void on_nack(peer& p, const wire_header& h);
    void on_write_arrived(peer& p, uint32_t recv_index, uint32_t byte_len);
    void on_control(peer& p, const wire_header& h);
    /// Receive `o` matched a message of `len` and `imm`: whether they agree (otherwise `o`
    /// has completed with LOOM_ERR_MISMATCH).
    bool agrees(op* o, uint64_t len, uint64_t imm);
    /// Receive `o` agreed with an RTS: registers its buffer and answers CTS.
    void clear_to_send(peer& p, op* o, uint32_t token);
    void post_write(peer& p, op* o, uint64_t addr, uint32_t rkey, uint32_t recv_index);
    bool post_buf(peer& p, uint32_t send_slot, size_t bytes);
    void reply(peer& p, const wire_header& h);
    void flush_replies(peer& p);
    void repost(peer& p, uint32_t slot);
    // verbs_endpoint.cc
    void complete(op* o, loom_status_t st, size_t bytes);
    /// An operation for a post, or null past LOOM_VERBS_MAX_OPS.
    op* take(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len, uint64_t cookie);
    uint32_t index(const op* o) { return uint32_t(o - match_.at(0)); }
    bool is_send(const op* o) const { return o->state >= op_state::send_eager; }
    /// Completes every operation toward `p` with PEER_FAILURE; `graceful`: it said goodbye
    /// (logged as information, not as an error).
    void fail_peer(peer& p, const std::string& why, bool graceful = false);
    /// Tells every live peer this endpoint closes, and waits briefly for the notices to go.
    void say_goodbye();
    bool cancel_send(op* o);
    bool cancel_recv(op* o);
    /// Polls until `o` is no longer in flight, or the deadline: false at the deadline.
    bool drive_until_idle(op* o, double timeout_s);

    endpoint_config config_;
    settings settings_;
    const verbs_api& api_;
    fast_path fast_{};
    std::string device_name_;
    port_info port_;
    ibv_context* ctx_          = nullptr;
    ibv_pd* pd_                = nullptr;
    ibv_cq* cq_                = nullptr;
    ibv_comp_channel* channel_ = nullptr;  // completion events for the waker, or null
    int bell_fd_               = -1;       // eventfd: ring() from another thread
    size_t buf_bytes_          = 0;        // one ring buffer: header + eager limit
    std::unique_ptr<char[]> recv_ring_;
    std::unique_ptr<char[]> send_ring_;
    ibv_mr* recv_mr_ = nullptr;
    ibv_mr* send_mr_ = nullptr;
    mr_backend backend_;
    mr_cache cache_;
    std::vector<peer> peers_;        // indexed by rank
    std::vector<int> peer_ranks_;    // the connected ones
    std::vector<op*> send_slot_op_;  // by send buffer: the eager send it carries, or null
    common::matcher<op> match_;
    common::slab<early_msg> early_;
    uint64_t held_bytes_ = 0;  // eager payloads copied out of their buffers, not yet taken
    std::unique_ptr<common::loopback> loop_;  // peer == own rank
    bool connected_ = false;
    bool closed_    = false;
    status ok_;
    std::vector<status> errors_;  // by rank: why the peer failed
};

/// Opens an endpoint over `api` (tests pass a simulated HCA's table).
result<std::unique_ptr<endpoint>> open_with(const endpoint_config& config, const verbs_api& api);

}  // namespace loom::drivers::verbs
