// SPDX-License-Identifier: Apache-2.0
// The loopback matcher (loopback.hh): one copy from send to receive buffer when both are posted.
#include <cstring>

#include "drivers/common/loopback.hh"
#include "drivers/common/loopback_params.hh"

namespace loom::drivers::common {

loopback::loopback(int rank, size_t max_ops) : rank_(rank) {
    match_.open(max_ops);
}

loopback::op* loopback::take(bool is_send, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                             uint64_t cookie) {
    op* o = match_.take(rank_, tag, imm, buf, len, cookie);
    if (o != nullptr) {
        o->is_send = is_send;
    }
    return o;
}

// Both operations are posted: copy once, then complete them in posting order.
void loopback::match(op* send, op* recv, bool recv_first) {
    loom_status_t recv_status = LOOM_SUCCESS;
    size_t recv_bytes         = send->len;
    if (send->len != recv->len || send->imm != recv->imm) {
        recv_status = LOOM_ERR_MISMATCH;  // another call's message: deliver nothing
        recv_bytes  = 0;
    } else if (send->len > 0) {
        std::memcpy(recv->buf, send->buf, send->len);
    }
    recv->imm = send->imm;
    if (recv_first) {
        match_.complete(recv, recv_status, recv_bytes);
        match_.complete(send, LOOM_SUCCESS, send->len);
    } else {
        match_.complete(send, LOOM_SUCCESS, send->len);
        match_.complete(recv, recv_status, recv_bytes);
    }
}

loom_status_t loopback::post_send(uint64_t tag, uint64_t imm, const void* buf, size_t len,
                                  uint64_t cookie) {
    if ((tag & control_tag_bit) != 0) {
        // An unsolicited notice to ourselves: one completion, as a receiver would see it.
        op* o = take(false, tag, imm, nullptr, 0, control_cookie);
        if (o == nullptr) {
            return LOOM_ERR_NO_RESOURCE;
        }
        match_.complete(o, LOOM_SUCCESS, 0);
        return LOOM_SUCCESS;
    }
    if (buf == nullptr && len > 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    op* o = take(true, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    if (op* r = unmatched_.take_posted(tag); r != nullptr) {
        match(o, r, /*recv_first=*/true);
    } else {
        unmatched_.early.push_back(o);
    }
    return LOOM_SUCCESS;
}

loom_status_t loopback::post_recv(uint64_t tag, uint64_t imm, void* buf, size_t len,
                                  uint64_t cookie) {
    if ((buf == nullptr && len > 0) || (tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;  // control tags are never matched
    }
    op* o = take(false, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    if (op* s = unmatched_.take_early(tag); s != nullptr) {
        match(s, o, /*recv_first=*/false);
    } else {
        unmatched_.posted.push_back(o);
    }
    return LOOM_SUCCESS;
}

// Unmatched operations hold nothing but their pool entry; a matched one already completed.
bool loopback::cancel(uint64_t cookie) {
    op* o = match_.find_pending(cookie);
    if (o == nullptr) {
        return false;
    }
    (o->is_send ? unmatched_.early : unmatched_.posted).remove(o);
    match_.release(o);
    return true;
}

void loopback::fail_all(loom_status_t code) {
    match_.fail(unmatched_.early, code);
    match_.fail(unmatched_.posted, code);
}

size_t loopback_max_ops() {
    int64_t v = params::max_ops.get();
    return v > 0 ? static_cast<size_t>(v) : 1;
}

}  // namespace loom::drivers::common
