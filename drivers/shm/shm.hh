// SPDX-License-Identifier: Apache-2.0
// The shm driver: ranks on one host talk through shared memory
// (docs/architecture.md#how-data-moves).
//
// Segments. Each rank creates its own segment, /dev/shm/loom-<job>-<rank>, holding what
// other ranks write *to it*: one inbound SPSC ring per sender (shm_ring.hh), an array of
// acknowledgement words for its own rendezvous sends, and one outbound bounce channel per
// receiver (used only when CMA is not permitted). A rank maps every peer's segment and
// produces into the ring that peer keeps for it. One owner per segment makes crash cleanup
// simple: the header stores the owner's pid, and every open first unlinks loom-* segments
// whose owner is dead (shm_device.cc). The owner unlinks its segment at close; connect()
// ends with a store barrier so no peer is still to map it by then.
//
// Messages. A message up to the receiver's slot payload (slot - 64-byte header) is copied
// into one ring slot (eager). A longer one sends a rendezvous descriptor (RTS: sender
// address, length, sender op index) through the ring; when the receive is posted the
// receiver copies straight from the sender's memory with process_vm_readv (CMA, a single
// copy) and writes the sender's ack word, which completes the send. Where CMA is not
// permitted (probed per peer at connect, or LOOM_SHM_CMA=off), the receiver instead asks
// the sender to stream the message through the pair's bounce channel (two copies), and
// caps().single_copy says false.
//
// Early arrivals. A message whose receive is not posted yet is moved out of the ring into
// a per-peer pool sized at connect (LOOM_SHM_UNEXPECTED): eager bytes are copied, RTS
// descriptors are kept until the receive is posted. A full pool leaves the slot in the ring,
// so the sender sees a full ring (back-pressure) and queues, then gets NO_RESOURCE only when
// its op pool (LOOM_SHM_MAX_OPS) is exhausted.
//
// Failure. While operations toward a peer are pending, a clock compare in poll() lets a
// liveness check run every LOOM_SHM_LIVENESS_MS: a pidfd (kill(pid, 0) where pidfds are
// missing) and the peer segment's state word (closed). A dead or closed peer completes its
// operations with LOOM_ERR_PEER_FAILURE, after what it already delivered has been taken.
//
// Files: shm_device.cc (segments, names, reclaim, parameters), shm_conn.cc (connect, close,
// open), shm_post.cc (post_send/post_recv, matching, early arrivals), shm_rndv.cc (large
// messages: CMA and bounce), shm_progress.cc (poll, liveness, completions),
// shm_doorbell.cc (how an idle rank sleeps until a peer's send rings it).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hh"
#include "base/intrusive_list.hh"
#include "base/spsc_ring.hh"
#include "drivers/common/loopback.hh"
#include "drivers/common/matcher.hh"
#include "drivers/driver.hh"
#include "drivers/shm/shm_doorbell.hh"

namespace loom::drivers::shm {

// ---------------------------------------------------------------- parameters (device)

struct shm_params {
    uint32_t slot_bytes          = 4096;
    uint32_t ring_slots          = 64;
    uint32_t unexpected_per_peer = 128;
    uint32_t max_ops             = 4096;
    uint64_t bounce_bytes        = 1 << 20;
    bool cma_allowed             = true;
    double liveness_s            = 0.005;
};
/// Reads and checks the LOOM_SHM_* parameters; the error names the parameter.
result<shm_params> read_params();

// ---------------------------------------------------------------- segment layout

constexpr uint64_t segment_magic     = 0x6d68732d6d6f6f6cULL;  // "loom-shm", little-endian
constexpr uint32_t layout_version    = 2;
constexpr const char* segment_prefix = "loom-";

enum segment_state : uint32_t { state_creating = 0, state_ready = 1, state_closed = 2 };

struct segment_header {
    uint64_t magic;
    uint32_t version;
    int32_t owner_pid;  // reclaim: a segment whose owner is dead is unlinked by the next open
    int32_t rank;
    int32_t size;
    uint32_t slot_bytes;
    uint32_t ring_slots;
    uint32_t max_ops;
    uint32_t reserved;
    uint64_t pid_ns;  // the owner's pid namespace: only there does owner_pid mean anything
    uint64_t bounce_bytes;
    uint64_t rings_offset;  // rings[src]: messages from rank src to the owner
    uint64_t ring_stride;
    uint64_t acks_offset;      // acks[op]: written by the receiver of the owner's RTS op
    uint64_t channels_offset;  // channels[dst]: bounce stream owner -> dst
    uint64_t channel_stride;
    uint64_t total_bytes;
    // R7 owner: store(ready, release) after initialising; store(closed, release) at close,
    //    after its last ack and ring write.
    // A7 peer: load(acquire) at attach and in liveness checks                pairs with R7
    alignas(cache_line) std::atomic<uint32_t> state;
    doorbell bell;  // rung by peers when the owner sleeps (shm_doorbell.hh)
};

/// One ring slot's header; the payload follows at byte 64, so it is cache-line aligned.
enum class msg_kind : uint16_t { eager = 1, rts = 2, control = 3 };
struct slot_header {
    uint64_t tag;
    uint64_t imm;   // the sender's immediate (driver.hh): checked before any byte is copied
    uint64_t len;   // payload bytes (eager) or message bytes (RTS)
    uint64_t addr;  // RTS: the message's address in the sender
    uint32_t seq;   // per-pair sequence number: the receiver checks it (corruption guard)
    uint16_t kind;  // msg_kind
    uint16_t reserved;
    uint32_t op;      // RTS: the sender's op index (its ack word)
    uint32_t op_gen;  // RTS: that op's use count, echoed in the ack (ack_word)
    uint8_t pad[16];
};
static_assert(sizeof(slot_header) == cache_line, "payload starts on a cache line");

/// An ack word: the RTS op's generation in the high half, so a late ack of an earlier use
/// of the op can never complete a later one, and its state in the low half. Both sides
/// change it with compare-and-swap from `pending`, so exactly one of "the receiver read the
/// message" and "the sender withdrew it" (driver.hh cancel) wins.
namespace ack_word {
constexpr uint32_t pending     = 0;
constexpr uint32_t revoked     = 0xffffffffu;  // sender: cancelled; the reader's bytes are void
constexpr uint32_t revoke_seen = 0xfffffffeu;  // receiver: done with a revoked message
inline uint64_t make(uint32_t gen, uint32_t state) {
    return (uint64_t{gen} << 32) | state;
}
inline uint32_t gen_of(uint64_t w) {
    return uint32_t(w >> 32);
}
inline uint32_t state_of(uint64_t w) {
    return uint32_t(w);
}
}  // namespace ack_word

/// The bounce stream from the segment owner (sender) to one receiver, used only without CMA.
/// One transfer at a time per pair; counters are free-running byte counts, so the data
/// index is counter % bounce_bytes and produced - consumed is the fill.
///   R3 receiver: requests.store(n + 1, release) after request_op = sender op index
///   A3 sender:   requests.load(acquire), then reads request_op            pairs with R3
///   R4 receiver: consumed.store(c, release) after copying bytes out
///   A4 sender:   consumed.load(acquire) before overwriting them            pairs with R4
///   R5 sender:   produced.store(p, release) after copying bytes in
///   A5 receiver: produced.load(acquire) before reading them                pairs with R5
struct bounce_channel {
    alignas(cache_line) std::atomic<uint64_t> requests;  // receiver
    std::atomic<uint32_t> request_op;                    // receiver, before `requests`
    alignas(cache_line) std::atomic<uint64_t> produced;  // sender
    alignas(cache_line) std::atomic<uint64_t> consumed;  // receiver
};
static_assert(sizeof(bounce_channel) == 3 * cache_line);

/// A mapping of one rank's segment: created (owner) or attached (peer).
class segment {
  public:
    segment() = default;
    ~segment();
    segment(segment&& other) noexcept;
    segment& operator=(segment&& other) noexcept;

    /// Creates and initialises the segment of `rank` (fails if a live owner holds the name).
    static result<segment> create(const std::string& name, const shm_params& p, int rank, int size);
    /// Maps a peer's segment and checks it is the one that peer published.
    static result<segment> attach(const std::string& name, pid_t pid, int rank, int size);

    bool mapped() const { return base_ != nullptr; }
    const std::string& name() const { return name_; }
    segment_header* header() const { return static_cast<segment_header*>(base_); }
    ring_spsc_view ring_from(int src) const;
    std::atomic<uint64_t>* acks() const;
    bounce_channel* channel_to(int dst) const;
    char* channel_data(int dst) const;
    /// Owner: removes the name (the mapping stays valid until unmap).
    void unlink();
    void unmap();

  private:
    void* base_   = nullptr;
    size_t bytes_ = 0;
    std::string name_;
    bool owner_ = false;
};

/// "loom-<job>-<rank>.", with the job reduced to [A-Za-z0-9._] (other bytes become '_'):
/// the start of the name of every segment rank `rank` of `job` ever created.
std::string segment_stem(std::string_view job, int rank);
/// segment_stem() + the owner's pid. The pid keeps a dead run's leftover and a live run's
/// segment apart by name, so one process reclaiming the first can never unlink the second
/// (names alone would race: read "owner dead", the new owner creates, then unlink).
std::string segment_name(std::string_view job, int rank, pid_t owner);
/// Unlinks every /dev/shm/loom-* segment whose owner process no longer exists; returns how
/// many it removed. Segments that are not loom's, or still being created, are left alone.
int reclaim_dead_segments();

// ---------------------------------------------------------------- endpoint state

enum class op_kind : uint8_t { send, recv };
// Where a pending operation is (the matcher's `idle` says it is neither pending nor listed).
enum class op_state : uint8_t {
    posted,       // receive waiting for its message
    queued,       // send waiting for ring space
    await_ack,    // RTS sent; waiting for the receiver's ack
    pull_queued,  // receive matched to an RTS, waiting for the bounce channel
    pulling,      // receive streaming through the bounce channel
};

struct op : common::match_op<op> {
    size_t done          = 0;  // bounce: bytes streamed so far
    uint64_t remote_addr = 0;
    uint32_t remote_op   = 0;
    uint32_t remote_gen  = 0;
    uint32_t index       = 0;
    uint32_t gen         = 0;  // sends: bumped per RTS (ack_word)
    op_kind kind         = op_kind::send;
    op_state state       = op_state::posted;
};

struct early_msg {
    early_msg* next      = nullptr;
    early_msg* prev      = nullptr;
    uint64_t tag         = 0;
    uint64_t imm         = 0;
    uint64_t len         = 0;
    uint64_t remote_addr = 0;
    uint32_t remote_op   = 0;
    uint32_t remote_gen  = 0;
    msg_kind kind        = msg_kind::eager;
    char* data           = nullptr;  // eager payload copy (unexpected pool buffer)
};

struct peer_state {
    int rank       = -1;
    pid_t pid      = 0;
    int pidfd      = -1;
    bool connected = false;
    bool failed    = false;
    bool cma       = false;
    segment seg;             // the peer's segment
    ring_spsc_producer out;  // my ring in the peer's segment
    ring_spsc_consumer in;   // the peer's ring in my segment
    uint32_t send_seq                  = 0;
    uint32_t recv_seq                  = 0;
    size_t eager_limit                 = 0;  // the peer's slot payload
    std::atomic<uint64_t>* remote_acks = nullptr;
    uint32_t remote_max_ops            = 0;
    common::match_lists<op, early_msg> match;  // posted receives, early arrivals
    intrusive_list<op> queued;                 // sends waiting for ring space, in order
    intrusive_list<op> await_ack;              // RTS sends waiting for the receiver
    intrusive_list<op> pulls;                  // receives matched to an RTS, bounce path, in order
    common::slab<early_msg> early_pool;
    std::unique_ptr<char[]> early_data;
    // Bounce, sending side: the channel in my segment toward this peer.
    bounce_channel* out_chan = nullptr;
    char* out_data           = nullptr;
    uint64_t out_bytes       = 0;
    uint64_t requests_seen   = 0;
    uint64_t produced        = 0;
    op* bounce_send          = nullptr;
    // Bounce, receiving side: the channel in the peer's segment toward me.
    bounce_channel* in_chan = nullptr;
    const char* in_data     = nullptr;
    uint64_t in_bytes       = 0;
    uint64_t requests_made  = 0;
    uint64_t consumed       = 0;

    bool busy() const {
        return !match.posted.empty() || !queued.empty() || !await_ack.empty() || !pulls.empty();
    }
};

class shm_endpoint final : public endpoint {
  public:
    shm_endpoint(const endpoint_config& config, const shm_params& p, segment own);
    ~shm_endpoint() override;

    caps capabilities() const override;
    status connect() override;
    const fast_path& fast() const override { return fast_; }
    void close() override;

    // The fast path (shm_post.cc, shm_progress.cc).
    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const { return match_.pending() || loop_.pending(); }
    bool cancel(uint64_t cookie);
    // The waker (shm_doorbell.cc).
    waker idle_waker() override;
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);
    void ring();

  private:
    // shm_conn.cc
    status attach_peer(peer_state& ps, const std::string& published);
    void probe_cma(peer_state& ps, uint64_t probe_addr);
    status barrier(const std::vector<int>& peers, const deadline& until);
    // shm_post.cc
    loom_status_t send_control(peer_state& ps, uint64_t tag, uint64_t imm);
    void complete(op* o, loom_status_t code, size_t bytes) { match_.complete(o, code, bytes); }
    void write_send(peer_state& ps, op* o, char* slot);
    bool accept_message(peer_state& ps, const slot_header& h, const char* payload);
    void deliver(peer_state& ps, op* o, const early_msg& m);
    // shm_rndv.cc
    void start_pull(peer_state& ps, op* o, const early_msg& m);
    bool ack(peer_state& ps, uint32_t remote_op, uint32_t remote_gen, loom_status_t code);
    void finish_pull(peer_state& ps, op* o);
    void check_acks(peer_state& ps);
    void progress_bounce_send(peer_state& ps);
    void progress_bounce_recv(peer_state& ps);
    // shm_progress.cc
    void progress_peer(peer_state& ps);
    void drain_inbound(peer_state& ps);
    void flush_queued(peer_state& ps);
    void check_liveness();
    bool peer_gone(const peer_state& ps) const;
    void fail_peer(peer_state& ps, const char* why, bool orderly_close);
    int fail_ops(peer_state& ps, loom_status_t code);
    void fail_all(loom_status_t code);

    endpoint_config config_;
    shm_params params_;
    segment own_;
    std::unique_ptr<peer_state[]> peers_;  // indexed by rank
    std::vector<peer_state*> active_;      // connected peers, in rank order
    common::matcher<op> match_;            // ops by index: an RTS names its op to the receiver
    common::loopback loop_;                // peer == own rank
    double next_liveness_s_ = 0;
    bool connected_         = false;
    bool closed_            = false;
    bool single_copy_       = false;
    fast_path fast_{};
};

}  // namespace loom::drivers::shm
