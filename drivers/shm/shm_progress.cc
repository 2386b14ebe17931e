// SPDX-License-Identifier: Apache-2.0
// shm fast path, progress side: the poll loop (docs/architecture.md#rule-poll-loops), draining
// inbound rings, flushing queued sends, liveness of peers, and handing out completions.
#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "base/clock.hh"
#include "base/log.hh"
#include "drivers/shm/shm.hh"

namespace loom::drivers::shm {
namespace {

// Messages taken from one peer's ring per poll: a fixed burst keeps one busy peer from
// starving the others and bounds the time one poll() takes.
constexpr int ring_burst = 64;

}  // namespace

int shm_endpoint::poll(completion* out, int max) {
    if (!closed_) {
        for (peer_state* ps : active_) {
            progress_peer(*ps);
        }
        // Periodic work gated by a clock compare (vDSO, no system call): peers are checked
        // for life only every liveness period, and only while something is pending.
        if (match_.pending()) {
            double now = now_s();
            if (now >= next_liveness_s_) {
                next_liveness_s_ = now + params_.liveness_s;
                check_liveness();
            }
        }
    }
    int n = match_.harvest(out, max);
    return n + loop_.poll(out + n, max - n);
}

// Everything one peer can move forward: its ring, my queued sends to it, acks of my
// rendezvous sends, and the bounce streams in both directions.
void shm_endpoint::progress_peer(peer_state& ps) {
    drain_inbound(ps);
    if (!ps.queued.empty()) {
        flush_queued(ps);
    }
    if (!ps.await_ack.empty()) {
        progress_bounce_send(ps);
        check_acks(ps);
    }
    if (!ps.pulls.empty()) {
        progress_bounce_recv(ps);
    }
}

void shm_endpoint::drain_inbound(peer_state& ps) {
    size_t payload_max = params_.slot_bytes - sizeof(slot_header);
    for (int i = 0; i < ring_burst; ++i) {
        const char* slot = ps.in.peek();
        if (slot == nullptr) {
            return;
        }
        slot_header h;
        std::memcpy(&h, slot, sizeof(h));
        bool eager   = h.kind == uint16_t(msg_kind::eager);
        bool rts     = h.kind == uint16_t(msg_kind::rts);
        bool control = h.kind == uint16_t(msg_kind::control);
        if (h.seq != ps.recv_seq || !(eager || rts || control) || (eager && h.len > payload_max)) {
            LOOM_LOG_ERROR(log::subsystem::net,
                           "shm: rank %d: corrupt slot from rank %d (seq %u, expected %u, kind "
                           "%u, len %llu)",
                           config_.rank, ps.rank, h.seq, ps.recv_seq, unsigned(h.kind),
                           (unsigned long long)h.len);
            fail_peer(ps, "sent a corrupt ring slot", false);
            return;
        }
        if (!accept_message(ps, h, slot + sizeof(h))) {
            return;  // early pool full: leave the slot, the sender waits (back-pressure)
        }
        ps.in.release();
        ++ps.recv_seq;
    }
}

void shm_endpoint::flush_queued(peer_state& ps) {
    while (!ps.queued.empty()) {
        char* slot = ps.out.try_reserve();
        if (slot == nullptr) {
            return;
        }
        write_send(ps, ps.queued.pop_front(), slot);
    }
}

bool shm_endpoint::peer_gone(const peer_state& ps) const {
    // A7: pairs with the release store of state_closed in the peer's close() (R7).
    if (ps.seg.header()->state.load(std::memory_order_acquire) == state_closed) {
        return true;
    }
    if (ps.pidfd >= 0) {
        pollfd p{ps.pidfd, POLLIN, 0};  // readable once the process has exited
        return ::poll(&p, 1, 0) > 0;
    }
    return ::kill(ps.pid, 0) == -1 && errno == ESRCH;
}

void shm_endpoint::check_liveness() {
    for (peer_state* ps : active_) {
        if (ps->failed || !ps->busy() || !peer_gone(*ps)) {
            continue;
        }
        // What the peer published before it went is still good: its messages, bounce bytes,
        // and the acks it wrote just before closing (ordered before `closed` by that release
        // store). Nothing more is sent to it.
        drain_inbound(*ps);
        if (!ps->await_ack.empty()) {
            check_acks(*ps);
        }
        if (!ps->pulls.empty()) {
            progress_bounce_recv(*ps);
        }
        bool closed =
            ps->seg.header()->state.load(std::memory_order_acquire) == state_closed;  // A7
        fail_peer(*ps, closed ? "closed its endpoint" : "died", closed);
    }
}

int shm_endpoint::fail_ops(peer_state& ps, loom_status_t code) {
    ps.bounce_send = nullptr;
    return match_.fail(ps.match.posted, code) + match_.fail(ps.queued, code) +
           match_.fail(ps.await_ack, code) + match_.fail(ps.pulls, code);
}

void shm_endpoint::fail_peer(peer_state& ps, const char* why, bool orderly_close) {
    ps.failed = true;
    // Receives still waiting on a peer that closed in order (not one that died) are what a
    // teardown leaves, e.g. a forwarder's standing header receives: worth a debug line only.
    bool teardown = orderly_close && ps.queued.empty() && ps.await_ack.empty() && ps.pulls.empty();
    int n         = fail_ops(ps, LOOM_ERR_PEER_FAILURE);
    if (n == 0) {
        return;  // it finished everything we had with it first: nothing failed
    }
    if (teardown) {
        LOOM_LOG_DEBUG(log::subsystem::net,
                       "shm: rank %d: peer rank %d closed its endpoint; %d posted receives fail",
                       config_.rank, ps.rank, n);
        return;
    }
    LOOM_LOG_WARN(log::subsystem::net,
                  "shm: rank %d: peer rank %d (pid %d) %s; %d pending operations fail with peer "
                  "failure",
                  config_.rank, ps.rank, int(ps.pid), why, n);
}

void shm_endpoint::fail_all(loom_status_t code) {
    for (peer_state* ps : active_) {
        fail_ops(*ps, code);
    }
}

}  // namespace loom::drivers::shm
