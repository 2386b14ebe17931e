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
#include <vector>

#include "base/intrusive_list.hh"
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
    int poll(completion* out, int max);
    bool pending() const { return in_use_ > 0; }
    /// Withdraws an unmatched operation (driver.hh cancel); false if none has `cookie`.
    bool cancel(uint64_t cookie);
    /// Completes every unmatched operation with `code` (close).
    void fail_all(loom_status_t code);

  private:
    enum class kind : uint8_t { send, recv };
    struct op {
        op* next = nullptr;
        op* prev = nullptr;
        uint64_t tag;
        uint64_t imm;  // sends: as posted; receives: expected, then the one that came
        uint64_t cookie;
        char* buf;
        size_t len;
        size_t bytes;
        loom_status_t status;
        kind what;
    };

    op* take(kind what, uint64_t tag, uint64_t imm, const void* buf, size_t len, uint64_t cookie);
    void complete(op* o, loom_status_t code, size_t bytes);
    void match(op* send, op* recv, bool recv_first);

    int rank_;
    std::vector<op> pool_;
    op* free_      = nullptr;
    size_t in_use_ = 0;
    intrusive_list<op> sends_;  // posted, not yet matched
    intrusive_list<op> recvs_;  // posted, not yet matched
    intrusive_list<op> done_;   // completed, not yet handed out by poll()
};

/// LOOM_SELF_MAX_OPS from the parameter registry: the loopback's pool wherever it serves.
size_t loopback_max_ops();

}  // namespace loom::drivers::common
