// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/reliable: the endpoint's state, shared by its files. Each file has one
// job: reliable_endpoint.cc (open, connect, post, cancel, poll, peer failure, close),
// reliable_tx.cc (frames out: segmentation, rendezvous requests and answers, acks,
// retransmission), reliable_rx.cc (frames in: checks, the window, matching, reassembly).
//
// Everything a frame or a message needs is sized at open: operations (the matcher's pool),
// early arrivals and their buffers (slabs), one send and one receive window per peer, the
// timer wheel. After connect() nothing allocates, locks or calls the system but the links'
// own non-blocking calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/intrusive_list.hh"
#include "drivers/common/completion_ring.hh"
#include "drivers/common/frame_link.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/matcher.hh"
#include "drivers/reliable/reliable.hh"
#include "drivers/reliable/reliable_wheel.hh"
#include "drivers/reliable/reliable_window.hh"
#include "drivers/reliable/reliable_wire.hh"

namespace loom::drivers::reliable {

/// Where an operation is, so cancel and failure find the list that holds it.
enum class op_at : uint8_t {
    none,
    sendq,      // send: waiting for its rts or its data frames to go out
    wait_cts,   // send: rts sent, waiting for the receive
    inflight,   // send: every frame out, waiting for their acks
    posted,     // receive: no message yet (matcher's posted list)
    rndv_wait,  // receive: cts sent, waiting for the data
    filling,    // receive: its message's frames are landing
};

struct op : common::match_op<op> {
    bool is_send     = false;
    bool silent      = false;  // a control send: no completion of its own
    bool rndv        = false;  // a send above the eager limit
    bool cts_ok      = false;  // rendezvous send: the receiver is ready
    op_at at         = op_at::none;
    uint32_t msg_id  = 0;
    size_t sent      = 0;             // bytes put into frames so far
    uint32_t unacked = 0;             // its data frames not yet acknowledged
    std::unique_ptr<uint8_t[]> copy;  // a cancelled send's bytes (cancel's copy)
};

/// A message that came before its receive: an eager one (whole, in a buffer) or a
/// rendezvous request (no bytes: they come after the receive's cts).
struct early_msg {
    early_msg* next = nullptr;
    early_msg* prev = nullptr;
    uint64_t tag = 0, imm = 0, len = 0;
    uint32_t msg_id = 0;
    bool rts        = false;
    uint8_t* buf    = nullptr;  // eager: a buffer of eager_limit bytes (null when len is 0)
};

/// An early buffer of the slab (its `next` links the free list).
struct early_buffer {
    early_buffer* next = nullptr;
    uint8_t* bytes     = nullptr;
};

/// The message whose data frames a peer is sending now: they come contiguously (a sender
/// segments one message at a time), so one per peer.
struct inbound {
    bool active      = false;
    uint64_t len     = 0;
    uint64_t got     = 0;
    uint64_t imm     = 0;
    op* recv         = nullptr;  // lands in this receive (cancelled: dropped)
    early_msg* early = nullptr;  // or in this early arrival; neither: dropped (mismatch)
};

struct cts_item {
    uint32_t msg_id = 0;
    bool discard    = false;
};

struct peer {
    int rank           = -1;
    int link           = -1;     // index into links_; -1: not a peer of this endpoint
    bool known         = false;  // its incarnation and first sequence number came
    bool connected     = false;  // it answered our hello
    bool failed        = false;
    bool farewell      = false;  // it answered our goodbye: it holds our last acks
    uint32_t inc       = 0;
    uint32_t first_seq = 0;  // ours toward it (sent in hellos)
    send_window tx;
    recv_window rx;
    uint32_t next_msg_id = 1;
    intrusive_list<op> sendq, wait_cts, inflight, rndv_wait;
    common::match_lists<op, early_msg> match;
    inbound in;
    common::completion_ring<cts_item> ctsq;
    bool ack_due        = false;
    uint32_t unacked_rx = 0;
    double last_heard = 0, last_ping = 0, last_hello = 0;
    // When the oldest frame in flight last moved (acknowledged, or the receiver said it is
    // only waiting for room): no progress for the peer timeout fails the peer.
    double last_progress = 0;
    // Round-trip estimate (RFC 6298's smoothing): the retransmission timeout follows the
    // peer's real answer time (a busy host's poll gaps included) and never drops below
    // LOOM_REL_RTO_US.
    double srtt = 0, rttvar = 0, rto = 0;
};

class rel_endpoint final : public endpoint {
  public:
    rel_endpoint(const endpoint_config& config,
                 std::vector<std::unique_ptr<common::frame_link>> links,
                 std::vector<int> link_of_peer, const options& opts);
    ~rel_endpoint() override {
        close();
        close_waker();
    }

    status init();
    caps capabilities() const override;
    status connect() override;
    const fast_path& fast() const override { return fast_; }
    void close() override;

    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const { return match_.pending() || self_.pending(); }
    bool cancel(uint64_t cookie);

    const reliable_stats& stats() const { return stats_; }

    // The waker (reliable_wait.cc): where every link has an rx event descriptor.
    waker idle_waker() override;
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);

  private:
    // A poll pass: frames in, timers, frames out, acks, flush, failure checks.
    void progress();
    void check_peers();
    void excuse_own_absence();
    void fail_peer(peer& p, const std::string& why);
    void finish_send(peer& p, op* o);
    op* take_op(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len, uint64_t cookie);
    void free_early(early_msg* e);
    std::string who(const peer& p) const;

    // reliable_tx.cc
    void pump(peer& p);
    bool emit(peer& p, header& h, const uint8_t* body, op* owner);
    void retransmit(tx_slot* s, bool fast);
    void arm_probe(peer& p);
    void send_ack(peer& p, uint8_t flags);
    void send_hello(peer& p, frame_kind kind);
    void send_goodbye(peer& p);
    void on_ack(peer& p, const header& h);
    void fill_unreliable(peer& p, header& h, frame_kind kind);

    // reliable_rx.cc
    void receive(int link);
    void accept_frame(int link, const uint8_t* data, size_t len);
    void accept_sequenced(peer& p, const header& h, const uint8_t* data, size_t len);
    void drain(peer& p);
    bool process(peer& p, const header& h, const uint8_t* body);
    bool on_data(peer& p, const header& h, const uint8_t* body);
    bool on_rts(peer& p, const header& h);
    void on_cts(peer& p, const header& h);
    bool begin_inbound(peer& p, const header& h);
    void finish_inbound(peer& p);
    early_msg* take_early(uint64_t len);
    void answer_rts(peer& p, op* r, uint32_t msg_id, uint64_t len, uint64_t imm);
    void deliver_early(peer& p, early_msg* e, op* r);

    int rank_, size_;
    endpoint_config config_;
    options opts_;
    std::vector<std::unique_ptr<common::frame_link>> links_;
    std::vector<int> link_of_peer_;
    std::vector<peer> peers_;
    std::vector<int> peer_ranks_;  // ranks with a link, in rank order
    common::matcher<op> match_;
    common::loopback self_;
    common::slab<early_msg> early_;
    common::slab<early_buffer> buffers_;
    std::vector<uint8_t> buffer_bytes_;
    timer_wheel wheel_;
    fast_path fast_{};
    reliable_stats stats_;
    uint64_t key_           = 0;
    uint32_t inc_           = 0;
    size_t payload_         = 0;  // body bytes per frame (link MTU - header)
    double now_             = 0;
    double next_link_check_ = 0;
    double last_pass_s_     = 0;  // the previous progress() pass (excuse_own_absence)
    bool connected_         = false;
    bool closed_            = false;
    int wake_fd_            = -1;  // epoll over the links' rx event descriptors
    int64_t sleep_cap_ns_   = 0;
    void close_waker();
};

/// The job key: HMAC-SHA-256 over the job's name and a salt rank 0 publishes in the store
/// (so it is known only to who can read the job's store), keyed by the job's secret where
/// one is given; its first 8 bytes (reliable_key.cc).
result<uint64_t> derive_job_key(const endpoint_config& config, const options& opts);

}  // namespace loom::drivers::reliable
