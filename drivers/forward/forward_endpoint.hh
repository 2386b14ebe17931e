// SPDX-License-Identifier: Apache-2.0
// The forwarding wrapper's endpoint (forward.hh), in three files by job:
//  - forward_endpoint.cc: the endpoint glue (open, connect, the fast-path entry points,
//    poll, cancel) and the user operations' pool;
//  - forward_route.cc: routing and flow control: the next hop and virtual channel of a
//    chunk, the buffer classes, chunk cutting at the source, relaying at a router, the
//    inner driver's refusals (retry) and stalled headers (back-pressure);
//  - forward_deliver.cc: what reaches this rank: incoming messages matched to posted
//    receives by (source, tag), the mismatch rule of driver.hh, early payloads, draining.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/intrusive_list.hh"
#include "drivers/common/matcher.hh"
#include "drivers/common/wrapper.hh"
#include "drivers/driver.hh"
#include "drivers/forward/fifo.hh"
#include "drivers/forward/forward.hh"
#include "drivers/forward/forward_wire.hh"
#include "routing/route_table.hh"
#include "topology/topology.hh"

namespace loom::drivers::forward {

enum class op_kind : uint8_t { send, recv, self };

struct user_op {
    op_kind kind;
    bool live      = false;
    bool cancelled = false;
    bool done      = false;  // completion queued
    uint64_t cookie;
    int peer;
    uint64_t tag, imm;
    const uint8_t* src = nullptr;  // sends
    uint8_t* dst       = nullptr;  // receives
    size_t len;
    size_t issued        = 0;  // sends: bytes cut into chunks so far
    bool first_issued    = false;
    uint32_t chunks_out  = 0;  // sends: chunks not yet handed to the first hop
    loom_status_t status = LOOM_SUCCESS;
    int msg              = -1;     // receives: the matched incoming message
    bool listed          = false;  // receives: posted, not yet matched (source_lists)
    std::unique_ptr<uint8_t[]> copy;
    user_op* next = nullptr;
    user_op* prev = nullptr;
};

// An incoming message at its destination.
struct in_msg {
    bool live = false;
    int src;
    uint64_t tag, imm, total;
    int rop              = -1;  // matched receive
    bool drain           = false;
    bool withdrawn       = false;
    loom_status_t status = LOOM_SUCCESS;
    uint64_t done_bytes  = 0;
    int parked_head      = -1;  // chunks waiting for their receive: a list through chunk::next
    int parked_tail      = -1;
    bool taken           = false;  // matched or draining: no later receive may match it
    in_msg* next         = nullptr;
    in_msg* prev         = nullptr;
};

/// One source's messages and receives at this destination, matched by tag in arrival and
/// posting order (drivers/common/matcher.hh): receives posted for it, its messages waiting
/// for one, and its messages taken (matched or draining) whose chunks still come.
struct source_lists {
    common::match_lists<user_op, in_msg> match;
    intrusive_list<in_msg> taken;
};

// waiting: a forwarded chunk whose header was taken but whose buffer class was busy; its
// payload stays with the inner driver until a buffer of the class frees (pump()).
enum class ch_state : uint8_t { free, pay_rx, parked, tx, waiting };

struct chunk {
    ch_state state = ch_state::free;
    header h;
    int in_link         = -1;  // -1 at the source
    uint32_t in_seq     = 0;
    int out_link        = -1;
    uint32_t out_seq    = 0;
    int buf             = -1;  // forwarding buffer
    int cls             = -1;  // its buffer class (output port, VC) when forwarded
    int next            = -1;  // the next chunk of a parked list
    int sop             = -1;  // source's send op
    int msg             = -1;  // destination message
    uint8_t* rx_into    = nullptr;
    const uint8_t* data = nullptr;
    uint32_t tx_pending = 0;
    bool hdr_posted = false, pay_posted = false, rx_posted = false;
    /// A sink receive left behind by a cancelled receive (see cancel()): not pending.
    bool orphan = false;
    /// Destination chunk that arrived before its receive: its payload is read into this
    /// private buffer (so the upstream router's buffer is freed) and copied out on match.
    /// An index into early_store_; -1 when none.
    int early = -1;
};

struct link_state {
    int peer;
    int dim         = -1;  // the dimension this link runs along
    uint32_t tx_seq = 0;
    uint32_t rx_seq = 0;  // the next header seq to post a receive for
    std::vector<header> hdr;
    std::vector<uint32_t> hdr_seq;
    link_stat stat;
};

class forward_endpoint final : public common::wrapper_endpoint<forward_endpoint> {
  public:
    forward_endpoint(std::unique_ptr<endpoint> inner, const forward_config& c,
                     const topology::shape& s, routing::tie_rule ties, int rank);
    // The inner endpoint goes first: it may still read from or write into bufs_ and sink_
    // while it closes.
    ~forward_endpoint() override { inner_.reset(); }
    caps capabilities() const override;
    status connect() override;

    std::vector<link_stat> stats() const;
    bool link_statistics(std::vector<link_stat>* out) const override {
        *out = stats();
        return true;
    }

    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const;
    bool cancel(uint64_t cookie);
    /// Work of the wrapper's own that no inner event announces shortens the sleep
    /// (common/wrapper.hh).
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns) {
        int64_t cap = stirred_.load(std::memory_order_relaxed) ? 0 : sleep_cap_ns_;
        inner_waker_.sleep(inner_waker_.ctx, token, std::min(timeout_ns, cap));
    }

  private:
    int take_op();
    int take_chunk();
    void free_chunk(uint32_t c);
    void release_op(int i);
    void finish(int i, const completion& c);
    void handle(const completion& c);
    void on_header(int link, uint32_t slot, loom_status_t st);
    void post_header_rx(int link, uint32_t slot);
    void deliver(uint32_t c);
    void start_rx(uint32_t c, uint8_t* into);
    void start_tx(uint32_t c);
    bool try_tx(uint32_t c);
    bool try_rx(uint32_t c);
    void tx_done(uint32_t c, loom_status_t st);
    void rx_done(uint32_t c, loom_status_t st, bool withdrawn);
    void arrived(uint32_t c, loom_status_t st, bool withdrawn);
    void match_posted(int i);
    void withdraw_send(int i);
    void withdraw_recv(int i);
    void msg_progress(int m);
    in_msg* find_msg(int src, uint64_t tag);
    void match(int m, int r);
    void pump();
    void drain_parked(int m);
    void read_early(int m);
    int out_vc_of(const header& h, int in_link) const;
    int class_of(const header& h, int in_link) const;
    void park(int m, uint32_t c);
    int take_early();
    uint8_t* early_data(const chunk& k) { return early_store_[size_t(k.early)].get(); }
    void unlist_recv(int i);
    int index_of(const user_op* o) const { return int(o - ops_.data()); }
    int index_of(const in_msg* m) const { return int(m - msgs_.data()); }

    std::vector<std::unique_ptr<uint8_t[]>> bufs_;
    std::unique_ptr<uint8_t[]> sink_;
    forward_config cfg_;
    topology::shape shape_;
    routing::route_table table_;
    int rank_;
    /// The last poll() handled inner completions, or a post came since: what that started
    /// (relayed chunks, sends completed at posting) may wait in the inner driver unannounced.
    /// Atomic: sleep() reads it while another thread may post.
    std::atomic<bool> stirred_{false};
    std::vector<link_state> links_;
    std::vector<int> link_of_;  // rank -> link index, -1 when not a neighbour
    std::vector<user_op> ops_;
    std::vector<int> free_ops_;
    std::vector<chunk> chunks_;
    std::vector<uint32_t> free_chunks_;
    /// Free forwarding buffers per class, a class per output channel (port, VC): a chunk
    /// a router sends on takes a buffer of the channel it leaves on, so a buffer waits only
    /// on the next channel of its route. The dateline VCs make those waits acyclic
    /// (routing/channel_graph.hh proves it per shape), so no cycle of routers can hold
    /// every buffer. A chunk whose class is busy waits in its class queue (waiting_) without
    /// blocking the link's other classes.
    std::vector<std::vector<int>> free_bufs_;
    std::vector<fifo<uint32_t>> waiting_;
    uint32_t per_class_ = 1;
    int vcs_            = 1;
    std::vector<in_msg> msgs_;
    std::vector<int> free_msgs_;
    std::vector<source_lists> sources_;  // by source rank: messages in progress, receives
    /// Early-arrival buffers (chunk-sized), recycled: made on first need, never freed.
    std::vector<std::unique_ptr<uint8_t[]>> early_store_;
    std::vector<int> free_early_;
    std::vector<int> sends_;  // send ops still cutting chunks, in posting order
    fifo<uint32_t> retry_;    // chunks whose inner post was refused (NO_RESOURCE)
    fifo<uint32_t> stalled_;  // header slots (link * headers + slot) awaiting a chunk
    fifo<completion> done_;   // user completions ready
    int live_chunks_         = 0;
    uint32_t waiting_chunks_ = 0;  // chunks in waiting_
    int live_ops_            = 0;
    uint32_t own_chunks_     = 0;  // chunks of this rank's sends: at most half of them all
};

}  // namespace loom::drivers::forward
