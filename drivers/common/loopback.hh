// SPDX-License-Identifier: Apache-2.0
// The loopback matcher: a rank talking to itself. It is the whole of the self driver and
// the peer == own rank route of shm, tcp and fwd. It is also the reference for the matching
// semantics every driver shares (driver.hh):
//  - a receive matches the oldest unmatched send with the same tag, whichever was posted
//    first; tags are matched, not queued FIFO across tags;
//  - there is exactly one copy, from the send buffer into the receive buffer, when both are
//    posted; a send posted before its receive keeps its buffer (like a rendezvous) and
//    completes together with the receive;
//  - a message whose length or immediate differs from what the receive expects completes
//    the receive with LOOM_ERR_MISMATCH (completion.imm = the imm that came) and the send
//    with LOOM_SUCCESS, and delivers nothing;
//  - a control tag (bit 63) is never matched: sending one produces an unsolicited
//    completion (cookie = control_cookie, tag, imm) and no completion for the send itself,
//    whose cookie would be indistinguishable from it;
//  - completions come out in the order the operations completed; when a match completes
//    two, the one posted first comes out first.
// Operations live in a pool sized at construction (LOOM_SELF_MAX_OPS); a full pool is
// LOOM_ERR_NO_RESOURCE, and an operation returns to the pool when poll() hands out its
// completion, so the completion list can never overflow.
#pragma once

#include <cstddef>
#include <cstdint>

#include "drivers/common/matcher.hh"
#include "drivers/driver.hh"

namespace loom::drivers::common {

class loopback {
  public:
    /// `rank` is reported as the peer in completions; `max_ops` bounds posted operations.
    loopback(int rank, size_t max_ops);
    loopback(const loopback&)            = delete;
    loopback& operator=(const loopback&) = delete;

    loom_status_t post_send(uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(uint64_t tag, uint64_t imm, void* buf, size_t len, uint64_t cookie);
    int poll(completion* out, int max) { return match_.harvest(out, max); }
    bool pending() const { return match_.pending(); }
    /// Withdraws an unmatched operation (driver.hh cancel); false if none has `cookie`.
    bool cancel(uint64_t cookie);
    /// Completes every unmatched operation with `code` (close).
    void fail_all(loom_status_t code);

  private:
    struct op : match_op<op> {
        bool is_send = false;
    };

    op* take(bool is_send, uint64_t tag, uint64_t imm, const void* buf, size_t len,
             uint64_t cookie);
    void match(op* send, op* recv, bool recv_first);

    int rank_;
    matcher<op> match_;
    match_lists<op, op> unmatched_;  // posted: receives; early: sends
};

/// LOOM_SELF_MAX_OPS from the parameter registry: the loopback's pool wherever it serves.
size_t loopback_max_ops();

}  // namespace loom::drivers::common
