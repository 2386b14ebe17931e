// SPDX-License-Identifier: Apache-2.0
// The node-local offload (engine/offload.hh) that runs the flat algorithms' steps
// (algorithms/flat.cc) over the node's flat segment (flat_segment.hh): inc_push writes this
// rank's vector into its slot, inc_pull reads the slots it needs into the output, reducing
// while it reads (all-reduce, reduce, broadcast) or copying (all-gather, all-to-all). The engine
// polls it beside the driver; nothing here blocks or allocates on the way of a call, and its only
// system call there is a futex wake for a peer that sleeps waiting for this rank (below).
//
// LL words. Each 8-byte word holds 4 bytes of the vector (low half) and the call's flag
// (high half), written with one 8-byte store, so a reader that sees the flag sees the data
// with it: no header message, no separate "ready" store, no fence between data and flag.
// The flag is the call's sequence number + 1 (0 is what a fresh segment holds), so nothing
// is reset between calls: a stale word carries an older call's flag.
//
// Reduction. The output is built in rank order 0..N-1, 256 data bytes (64 words) at a time:
// once all 64 words of a slot's chunk carry the flag, they are unpacked into a staging
// chunk and combined into the output with the engine's kernel (runtime/kernels; the first
// slot is copied). Every rank therefore computes each element in the same order and gets
// bit-identical floats; the chunk keeps the output line in cache across the N slots.
//
// Copy collectives (all-gather, all-to-all). A call is one inc_push per block a rank sends
// and one inc_pull per block it receives (algorithms/flat.cc: aggregation slot = writer for
// all-gather, writer·N + reader for all-to-all). The offload gathers them into one entry
// (the parts below, one per peer, allocated with the table) and runs them as one hand-off:
// the rank writes every block it sends into its slot in one pass (all-to-all: block j at
// word j·⌈B/4⌉, so every block starts on a word), publishes, then copies each writer's
// block straight from the LL words into the output, no staging. A call that does not fit
// the slot (flat_fits) is NOT_APPLICABLE, as an oversized reduction is. A call completes
// up to 2(N-1) steps at once; completions that do not fit the engine's array wait in a
// queue sized for one call and go out on the next poll.
//
// Reuse rule (two buffers per slot). Call with sequence s uses buffer s & 1 of every slot.
// Before a rank overwrites its buffer b, it waits until every rank's `done` word (the flag of
// the last call that rank finished, published with a release store after its reads) has
// reached the flag this rank last wrote into b: then no reader can still be reading it.
// In a loop of all-reduces the condition already holds (a rank that finished call s-1 read
// every slot of s-1, so every peer had started s-1 and finished s-2), so it costs one pass
// over N cache lines; a reduce's non-roots, which never read, are held back by the root.
//
// Mismatches. Each rank publishes the call it is in (flag and the call's signature, which
// the engine's messages carry too) in its line, and before it touches its output checks
// that every rank is in the same call (or past it: a rank that went on had checked this
// one); another signature fails the call with LOOM_ERR_MISMATCH naming that rank, with the
// receive buffer untouched, as the message path does. A call that failed (mismatch,
// timeout, cancelled) leaves nothing to undo: `done` stays at the last call this rank
// finished, which only makes writers wait for a later one, and every flag is its call's.
//
// Order. Calls run one at a time in sequence order, as inc_offload does: collectives start
// in the same order on every rank and the engine posts a call's steps when it starts.
//
// Waits. A flag or `done` that does not come is a wait with the call's deadline; every
// 2 ms of it the awaited rank's liveness is checked (a pidfd, as drivers/shm does), so a
// dead rank fails the call with LOOM_ERR_PEER_FAILURE naming it, the waiting rank and the
// call, long before the deadline; the deadline gives LOOM_ERR_TIMEOUT naming the same.
// The offload never spins by itself: poll() returns and the engine's idle policy yields,
// then sleeps on this rank's doorbell (idle_waker: a futex word in its line of the
// segment). A writer that has published (its slot, or its `done`) wakes the ranks whose
// line says they sleep waiting for it, with one futex wake each; none when nobody sleeps,
// the usual case with a core per rank. Waking only the ranks that wait for this writer
// (`waiting_on`, set before the last look at the data) keeps N writers from waking every
// sleeper N times. With more ranks than cores a waiting rank leaves the run queue
// rather than napping, and is back within microseconds of the data it waits for.
//
// No spinning of its own. N = 2 on the 2-core VM is bimodal: the 8-byte flat all-reduce
// takes 0.8 µs when both ranks are on a core and 3 µs when they share one (the other core
// busy with other work): then every call is two hand-offs through the engine's
// sched_yield, about 1.5 µs each here; the futex doorbell is not involved (10 futex calls
// over 2000 calls). Polling the awaited words for up to 20 µs before returning made the
// shared case 23 µs (the peer cannot run while the waiter spins), and spinning only while
// the awaited rank had polled within 3 µs still made it 4.1 µs against 3.0 (a rank that
// was just switched out looks running): measured with 7 interleaved runs each under a
// load of 20 (docs/performance.md#flat). So a wait returns at once and the engine's policy
// (4 passes, then yield: the hand-off) decides.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/flat_segment.hh"
#include "engine/offload.hh"
#include "kernels/reduce.hh"

namespace loom::comm {

class flat_offload final : public engine::offload {
  public:
    flat_offload(flat_segment seg, int rank, size_t max_bytes);
    ~flat_offload() override;

    loom_status_t post(const engine::offload_op& op) override;
    int poll(engine::offload_completion* out, int max) override;
    bool cancel(uint64_t cookie) override;
    bool pending() const override;
    std::string last_failure() const override { return failure_; }
    int failed_peer() const override { return failed_peer_; }
    int awaited_peer() const override { return awaited_; }
    drivers::waker idle_waker() override { return drivers::waker_of(this); }
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);

    size_t max_bytes() const { return max_bytes_; }
    /// Marks this rank as attached (its pid in its line); the segment's name can go.
    void announce();
    flat_segment& segment() { return seg_; }

  private:
    static constexpr size_t chunk_bytes = 256;  // data bytes per reduction step (64 words)
    enum class phase : uint8_t { halves, write, verify, read };
    struct part {  // a copy collective's block to or from one peer
        void* data      = nullptr;
        uint64_t count  = 0;
        uint64_t cookie = 0;
        bool posted     = false;
    };
    struct entry {
        bool used = false, has_push = false, has_pull = false;
        int halves_needed = 0, halves_posted = 0;
        engine::offload_op push, pull;   // the first of each (copy collectives: the key only)
        std::vector<part> sends, recvs;  // copy collectives, by peer; sized once, never freed
        const engine::offload_op& key() const { return has_push ? push : pull; }
        void reset();
    };
    struct running {
        entry* e      = nullptr;
        phase at      = phase::halves;
        uint32_t flag = 0, parity = 0;
        size_t bytes              = 0;  // the vector
        size_t chunk              = 0;  // next chunk to read
        int reader                = 0;  // next slot of that chunk (index into the readers)
        int verified              = 0;  // ranks whose call word matched
        bool push_done            = false;
        bool copies               = false;  // all-gather or all-to-all
        size_t stride_words       = 0;      // all-to-all: words per block in a slot
        kernels::reduce_fn kernel = nullptr;
        double stall_since_s = 0, next_check_s = 0;
    };

    entry* next_ready();
    void step();
    bool start(entry& e);
    bool write_ready(int* behind);
    void write_slot();
    void write_words(const void* src, size_t bytes, size_t first_word);
    bool read_some(int* waiting_for);
    bool read_copies(int* waiting_for);
    /// True when every rank is in this call (or past it); a mismatch sets *mismatch.
    bool verify(int* waiting_for, int* mismatch);
    bool stalled(int peer, const char* what);
    void finish(loom_status_t code);
    void complete_pushes(loom_status_t code);
    void emit(uint64_t cookie, loom_status_t code);
    int drain(engine::offload_completion* out, int max);
    bool peer_dead(int peer);
    void wake_sleepers();
    /// Records whom this rank waits for; true when that changed (look at the data again:
    /// the writer may have checked `waiting_on` before this store).
    bool waiting_on(int peer);

    flat_segment seg_;
    int rank_;
    int size_;
    size_t max_bytes_;
    std::vector<entry> entries_;      // fixed table
    std::vector<int> pidfds_;         // per peer, opened when first waited for
    uint32_t last_flag_[2] = {0, 0};  // the flag this rank last wrote into each buffer
    running run_;
    std::vector<engine::offload_completion> queued_;  // completions not yet handed out
    size_t queued_head_ = 0, queued_n_ = 0;           // capacity: one call's (2N + 2)
    alignas(64) std::byte staging_[chunk_bytes];
    std::string failure_;
    int failed_peer_ = -1;
    int awaited_     = -1;
};

/// Whether the flat algorithms run a call of `dtype`/`op` (a reduction kernel exists).
bool flat_carries(schedule::collective coll, loom_dtype_t dtype, loom_op_t op);

/// Whether a call of `count` elements (collective.hh conventions) fits a slot made for
/// `max_bytes`: the vector (reductions, broadcast), the largest block (all-gather), or the N
/// blocks a writer packs, each rounded up to whole 4-byte words (all-to-all).
bool flat_fits(schedule::collective coll, int nranks, int64_t count, size_t dtype_size,
               size_t max_bytes);

/// The steps (inc_push and inc_pull) one rank posts for a flat call (algorithms/flat.cc).
int flat_halves(schedule::collective coll, int rank, int root, int nranks);

}  // namespace loom::comm
