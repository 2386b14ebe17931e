// The loopback matcher (loopback.hh): one copy from send to receive buffer when both are posted.
#include <cstring>

#include "drivers/common/loopback.hh"
#include "drivers/common/loopback_params.hh"

namespace loom::drivers::common {

loopback::loopback(int rank, size_t max_ops) : rank_(rank), pool_(max_ops) {
    // Thread the free list through the pool once; take() and poll() move ops in and out.
    for (size_t i = pool_.size(); i-- > 0;) {
        pool_[i].next = free_;
        free_         = &pool_[i];
    }
}

loopback::op* loopback::take(kind what, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                             uint64_t cookie) {
    op* o = free_;
    if (o == nullptr) {
        return nullptr;
    }
    free_     = o->next;
    o->next   = nullptr;
    o->prev   = nullptr;
    o->tag    = tag;
    o->imm    = imm;
    o->cookie = cookie;
    o->buf    = static_cast<char*>(const_cast<void*>(buf));
    o->len    = len;
    o->bytes  = 0;
    o->status = LOOM_SUCCESS;
    o->what   = what;
    ++in_use_;
    return o;
}

void loopback::complete(op* o, loom_status_t code, size_t bytes) {
    o->status = code;
    o->bytes  = bytes;
    done_.push_back(o);
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
        complete(recv, recv_status, recv_bytes);
        complete(send, LOOM_SUCCESS, send->len);
    } else {
        complete(send, LOOM_SUCCESS, send->len);
        complete(recv, recv_status, recv_bytes);
    }
}

loom_status_t loopback::post_send(uint64_t tag, uint64_t imm, const void* buf, size_t len,
                                  uint64_t cookie) {
    if ((tag & control_tag_bit) != 0) {
        // An unsolicited notice to ourselves: one completion, as a receiver would see it.
        op* o = take(kind::recv, tag, imm, nullptr, 0, control_cookie);
        if (o == nullptr) {
            return LOOM_ERR_NO_RESOURCE;
        }
        complete(o, LOOM_SUCCESS, 0);
        return LOOM_SUCCESS;
    }
    if (buf == nullptr && len > 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    op* o = take(kind::send, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    if (op* r = recvs_.find_tag(tag); r != nullptr) {
        recvs_.remove(r);
        match(o, r, /*recv_first=*/true);
    } else {
        sends_.push_back(o);
    }
    return LOOM_SUCCESS;
}

loom_status_t loopback::post_recv(uint64_t tag, uint64_t imm, void* buf, size_t len,
                                  uint64_t cookie) {
    if ((buf == nullptr && len > 0) || (tag & control_tag_bit) != 0) {
        return LOOM_ERR_INVALID_ARGUMENT;  // control tags are never matched
    }
    op* o = take(kind::recv, tag, imm, buf, len, cookie);
    if (o == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    if (op* s = sends_.find_tag(tag); s != nullptr) {
        sends_.remove(s);
        match(s, o, /*recv_first=*/false);
    } else {
        recvs_.push_back(o);
    }
    return LOOM_SUCCESS;
}

int loopback::poll(completion* out, int max) {
    int n = 0;
    while (n < max && !done_.empty()) {
        op* o    = done_.pop_front();
        out[n++] = completion{o->cookie, o->status, rank_, o->bytes, o->tag, o->imm, false};
        o->next  = free_;
        free_    = o;
        --in_use_;
    }
    return n;
}

// Unmatched operations hold nothing but their pool entry; a matched one already completed.
bool loopback::cancel(uint64_t cookie) {
    for (intrusive_list<op>* list : {&sends_, &recvs_}) {
        for (op* o = list->front(); o != nullptr; o = o->next) {
            if (o->cookie == cookie) {
                list->remove(o);
                o->next = free_;
                free_   = o;
                --in_use_;
                return true;
            }
        }
    }
    return false;
}

void loopback::fail_all(loom_status_t code) {
    while (op* o = sends_.pop_front()) {
        complete(o, code, 0);
    }
    while (op* o = recvs_.pop_front()) {
        complete(o, code, 0);
    }
}

size_t loopback_max_ops() {
    int64_t v = params::max_ops.get();
    return v > 0 ? static_cast<size_t>(v) : 1;
}

}  // namespace loom::drivers::common
