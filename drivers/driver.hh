// SPDX-License-Identifier: Apache-2.0
// The driver interface (docs/architecture.md#rule-driver-interface): a control part that may block
// and allocate (open, connect, close) and a fast path that never does (post_send, post_recv, poll).
//
// Semantics every driver provides:
//  - reliable, exactly-once delivery between connected ranks; a message is identified by
//    (source rank, 64-bit tag) and lands in the receive posted for that (peer, tag), whether
//    the receive was posted before or after the message arrived (the driver keeps early
//    arrivals: eager copies for small messages, a rendezvous for large ones);
//  - a tag is in flight at most once per (source, destination) at a time (the engine makes
//    tags unique per communicator, collective and message);
//  - every message carries a 64-bit immediate `imm` beside its tag (the engine puts the call's
//    signature there: primitive, count, dtype, op, root, algorithm). A receive states the
//    imm it expects; a message whose imm or length differs completes the receive with
//    LOOM_ERR_MISMATCH (completion.imm = the imm that arrived) and delivers NOTHING into the
//    receive buffer — the driver decides from the header, before the payload is copied;
//  - control messages: a tag with bit 63 set (control_tag_bit) is never matched against
//    receives: it is delivered as an unsolicited completion (cookie = control_cookie, with
//    peer, tag and imm; no payload beyond the imm). The engine uses them to tell peers that a
//    call failed (mismatch, abort), so every rank returns instead of waiting;
//  - completions carry the poster's cookie; a failed peer completes every operation
//    toward it with LOOM_ERR_PEER_FAILURE;
//  - cancel(cookie) withdraws a posted operation whose call failed: once it returns, the
//    driver never touches that buffer again and reports no completion for the cookie. A
//    send the receiver may already be reading is either finished from a driver-owned copy
//    of its unsent bytes (the receiver gets the right data) or revoked, in which case the
//    receiver's read is void and its receive completes with LOOM_ERR_PEER_FAILURE and
//    `withdrawn` set. A receive being filled is drained into a sink, so the stream stays in
//    step for later messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/kv_store.hh"
#include "base/status.hh"
#include "base/wire_tag.hh"
#include "drivers/waker.hh"

namespace loom::drivers {

/// What carries an endpoint's messages: the cost class the tuner keeps its calibration and
/// built-in figures by. A wrapper (fault:, fwd:) reports its inner driver's.
enum class medium : uint8_t { shared_memory, network, loopback };

struct caps {
    const char* name        = "";
    bool single_copy        = false;  // large messages land without an intermediate copy
    size_t eager_limit      = 0;      // bytes sent eagerly (copied through slots/buffers)
    size_t max_message      = 0;      // largest message in bytes
    bool detects_peer_death = false;  // a dead peer completes operations with PEER_FAILURE
    // What a communicator asks before it relies on routing: an endpoint that forwards over
    // a lattice reaches every rank through its neighbours, and reports per-link counters
    // (endpoint::link_statistics). A child communicator of ranks that are no lattice opens
    // `direct` instead (a forwarder's inner driver); "" where `forwards` is false.
    bool forwards      = false;
    const char* direct = "";

    medium carrier = medium::shared_memory;  // what carries the messages (the cost class)
};

/// The tag layout's control bit, call bits and mismatch rule (base/wire_tag.hh): a message
/// and a receive of the same peer and the same call but with different immediates belong
/// to mismatched calls, even when their full tags differ (the ranks run different
/// schedules). Whichever arrives second completes the receive with LOOM_ERR_MISMATCH. Tags
/// whose call bits are all zero (raw use of a driver, without the engine) are exempt.
using wire::call_tag_mask;
using wire::control_cookie;
using wire::control_tag_bit;
using wire::same_call_other_imm;

struct completion {
    uint64_t cookie;       // as posted; control_cookie for an unsolicited control message
    loom_status_t status;  // LOOM_SUCCESS, LOOM_ERR_PEER_FAILURE, LOOM_ERR_MISMATCH
    int peer;
    size_t bytes;  // received length (receives), sent length (sends)
    uint64_t tag;  // the message's tag (receives and control messages)
    uint64_t imm;  // the message's immediate (receives and control messages)
    /// A receive whose sender cancelled the message while it was being read (its call
    /// failed): nothing valid was delivered; the sender's failure notice follows.
    bool withdrawn = false;
};

/// The fast path, resolved once at connect time and kept in one table (two cache lines).
/// None of these allocates, locks or makes a system call that can block; shm makes none
/// at all, tcp makes non-blocking socket calls only.
struct fast_path {
    void* ctx;
    /// Queues a send of `len` bytes from `buf` (which must stay valid until its completion)
    /// to `peer` with `tag` and immediate `imm`. A control tag sends only the imm (buf and
    /// len are ignored). LOOM_ERR_NO_RESOURCE: the queue is full, poll and retry.
    loom_status_t (*post_send)(void* ctx, int peer, uint64_t tag, uint64_t imm, const void* buf,
                               size_t len, uint64_t cookie);
    /// Queues a receive of exactly `len` bytes into `buf` for (peer, tag), expecting `imm`.
    loom_status_t (*post_recv)(void* ctx, int peer, uint64_t tag, uint64_t imm, void* buf,
                               size_t len, uint64_t cookie);
    /// Makes progress and returns up to `max` completions (0 when nothing finished).
    int (*poll)(void* ctx, completion* out, int max);
    /// True while an operation is posted and not yet completed.
    bool (*pending)(void* ctx);
    /// Withdraws the posted operation with `cookie` (see the semantics above). False when
    /// none is pending (it completed, or its completion waits in poll). Not for the hot
    /// path: it may scan the pending operations and allocate a copy of unsent bytes.
    bool (*cancel)(void* ctx, uint64_t cookie);
};
static_assert(sizeof(fast_path) <= 128, "the fast path fits two cache lines");

/// The fast path of an endpoint class E whose public members post_send, post_recv, poll,
/// pending and cancel have the table's shapes (without ctx): one generated trampoline per
/// entry, a single indirect call into E.
template <typename E>
fast_path fast_path_of(E* e) {
    return fast_path{
        e,
        [](void* c, int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
           uint64_t cookie) {
            return static_cast<E*>(c)->post_send(peer, tag, imm, buf, len, cookie);
        },
        [](void* c, int peer, uint64_t tag, uint64_t imm, void* buf, size_t len, uint64_t cookie) {
            return static_cast<E*>(c)->post_recv(peer, tag, imm, buf, len, cookie);
        },
        [](void* c, completion* out, int max) { return static_cast<E*>(c)->poll(out, max); },
        [](void* c) { return static_cast<E*>(c)->pending(); },
        [](void* c, uint64_t cookie) { return static_cast<E*>(c)->cancel(cookie); },
    };
}

struct endpoint_config {
    int rank = 0;
    int size = 1;
    std::string job;             // names shared resources (shm segments) per job
    kv_store* store  = nullptr;  // address exchange; may be null when size == 1
    double timeout_s = 30;       // connect deadline
    std::vector<int> peers;      // ranks to connect to; empty: all other ranks
    std::string fabric;          // fwd:<driver>: the lattice shape; empty: LOOM_FABRIC
};

/// Traffic of one directed link pair (this rank <-> neighbour `peer`) of a forwarding
/// endpoint, counting chunks (messages) and payload bytes, both the rank's own and
/// forwarded ones.
struct link_stat {
    int peer            = -1;
    uint64_t sent_msgs  = 0;
    uint64_t sent_bytes = 0;
    uint64_t recv_msgs  = 0;
    uint64_t recv_bytes = 0;
    uint64_t forwarded  = 0;  // chunks received on this link and sent on toward others
};

/// One rank's endpoint of a driver: the control part. Not thread-safe; the engine owns it.
class endpoint {
  public:
    virtual ~endpoint()               = default;
    virtual caps capabilities() const = 0;
    /// Connects to the configured peers (publishing and reading addresses in the store).
    virtual status connect() = 0;
    /// The fast path; valid after connect() until close().
    virtual const fast_path& fast() const = 0;
    /// Releases every resource; pending operations complete with LOOM_ERR_PEER_FAILURE.
    virtual void close() = 0;
    /// The per-neighbour link counters of an endpoint that forwards (caps::forwards), in
    /// shape::neighbours() order; false, and *out untouched, for the others.
    virtual bool link_statistics(std::vector<link_stat>* out) const {
        (void)out;
        return false;
    }
    /// How an idle caller sleeps until a peer signals (drivers/waker.hh); valid after
    /// connect() until close(). Null by default: the caller naps.
    virtual waker idle_waker() { return {}; }
};

/// Opens a driver by name ("self", "shm", "tcp"; "fault:<inner>" wraps another). The only
/// place that knows driver names (drivers/registry.cc).
result<std::unique_ptr<endpoint>> open(std::string_view name, const endpoint_config& config);
/// The driver names this build has.
std::vector<std::string> available();
/// The drivers that reach other hosts and can run here, best first (tcp always, last): what
/// a communicator whose ranks span several hosts takes when no transport is named. ofi comes
/// first where LOOM_OFI_PROVIDER names a network provider or libfabric offers a fabric of its
/// own (cxi, efa, verbs;ofi_rxm, …); over sockets loom's tcp is the faster of the two.
std::vector<std::string> network_transports();

}  // namespace loom::drivers
