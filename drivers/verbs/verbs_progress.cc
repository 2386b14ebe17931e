// SPDX-License-Identifier: Apache-2.0
// The verbs endpoint's progress: the completion queue (arrivals, send completions, writes,
// errors), the clear-to-send protocol, and the buffers it posts.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "base/log.hh"
#include "drivers/verbs/verbs.hh"

namespace loom::drivers::verbs {
namespace {

// Work completions taken per ibv_poll_cq.
constexpr int poll_batch = 32;

const char* kind_name(wr_kind k) {
    switch (k) {
        case wr_kind::recv:
            return "receive";
        case wr_kind::send_buf:
            return "send";
        case wr_kind::write:
            return "RDMA write";
    }
    return "request";
}

}  // namespace

void verbs_endpoint::progress() {
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        if (!p.replies_waiting.empty() && !p.failed) {
            flush_replies(p);
        }
    }
    ibv_wc wc[poll_batch];
    int n = api_.poll_cq(cq_, poll_batch, wc);
    for (int i = 0; i < n; ++i) {
        on_completion(wc[i]);
    }
}

void verbs_endpoint::on_completion(const ibv_wc& wc) {
    int rank = peer_of(wc.wr_id);
    if (rank < 0 || rank >= config_.size || peers_[size_t(rank)].qp == nullptr) {
        return;  // not ours: nothing posts with such an id
    }
    peer& p       = peers_[size_t(rank)];
    wr_kind kind  = kind_of(wc.wr_id);
    uint32_t slot = index_of(wc.wr_id);
    if (kind == wr_kind::send_buf) {
        // The send buffer is free again, whatever became of its message.
        op* o               = send_slot_op_[slot];
        send_slot_op_[slot] = nullptr;
        (slot - p.send_base < settings_.send_queue ? p.free_sends : p.free_replies).push_back(slot);
        if (wc.status == IBV_WC_SUCCESS && o != nullptr && !p.failed) {
            complete(o, LOOM_SUCCESS, o->len);
        }
    }
    if (wc.status != IBV_WC_SUCCESS) {
        fail_peer(p, std::string(kind_name(kind)) + " completed with " +
                         api_.wc_status_str(wc.status) + " (status " +
                         std::to_string(int(wc.status)) + ")");
        return;
    }
    if (p.failed) {
        return;  // its operations completed when it failed
    }
    if (kind == wr_kind::recv) {
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            on_write_arrived(p, ntohl(wc.imm_data), wc.byte_len);
            repost(p, slot);
        } else {
            on_message(p, slot, wc.byte_len);
        }
    } else if (kind == wr_kind::write) {
        op* o = match_.at(slot);
        if (o != nullptr && !o->idle && o->state == op_state::send_writing) {
            complete(o, LOOM_SUCCESS, o->len);
        }
    }
}

void verbs_endpoint::on_message(peer& p, uint32_t slot, uint32_t byte_len) {
    wire_header h;
    if (byte_len < sizeof h) {
        fail_peer(p, "a message of " + std::to_string(byte_len) + " bytes has no header");
        return;
    }
    std::memcpy(&h, recv_buf(slot), sizeof h);
    switch (msg_type(h.type)) {
        case msg_type::eager:
            if (h.len != byte_len - sizeof h) {
                fail_peer(p, "an eager message says " + std::to_string(h.len) + " bytes, " +
                                 std::to_string(byte_len - sizeof h) + " came");
                return;
            }
            on_eager(p, h, slot);  // reposts the buffer, or keeps it for the receive
            return;
        case msg_type::rts:
            on_rts(p, h);
            break;
        case msg_type::cts:
            on_cts(p, h);
            break;
        case msg_type::nack:
            on_nack(p, h);
            break;
        case msg_type::control:
            on_control(p, h);
            break;
        case msg_type::bye:
            fail_peer(p, "it closed its endpoint", true);
            return;
        default:
            fail_peer(p, "a message of unknown type " + std::to_string(h.type));
            return;
    }
    if (!p.failed) {
        repost(p, slot);
    }
}

bool verbs_endpoint::agrees(op* o, uint64_t len, uint64_t imm) {
    if (len != o->len || imm != o->imm) {
        match_.complete_mismatch(o, imm);
        return false;
    }
    return true;
}

// A message with no receive for its tag: a receive of the same call expecting another
// immediate completes with LOOM_ERR_MISMATCH (the ranks run other calls), and the message
// waits for its own receive. An eager payload is copied out, so its receive buffer goes back
// to the peer at once, while the copies stay within LOOM_VERBS_MAX_OPS messages and
// LOOM_VERBS_UNEXPECTED_BYTES; beyond, it waits in its buffer (the peer's HCA retries once
// all are taken: back-pressure). A copy's storage stays with its entry, so once the entries
// have grown to the sizes that come, keeping a message allocates nothing.
void verbs_endpoint::keep_early(peer& p, const wire_header& h, int32_t slot) {
    if (op* r = p.match.take_posted_contradicting(h.tag, h.imm)) {
        match_.complete_mismatch(r, h.imm);
    }
    bool copy = slot >= 0 && early_.in_use() < settings_.max_ops &&
                held_bytes_ + h.len <= settings_.unexpected_bytes;
    early_msg* e = early_.take();
    if (e == nullptr) {  // sized for the copies, every buffer and every send out
        fail_peer(p, "more early arrivals than its buffers and sends allow");
        return;
    }
    e->tag   = h.tag;
    e->imm   = h.imm;
    e->len   = h.len;
    e->type  = msg_type(h.type);
    e->token = h.token;
    e->slot  = copy ? -1 : slot;
    if (copy) {
        const char* payload = recv_buf(uint32_t(slot)) + sizeof h;
        e->data.assign(payload, payload + h.len);
        held_bytes_ += h.len;
    }
    p.match.early.push_back(e);
    if (copy) {
        repost(p, uint32_t(slot));
    }
}

void verbs_endpoint::on_eager(peer& p, const wire_header& h, uint32_t slot) {
    op* o = p.match.take_posted(h.tag);
    if (o == nullptr) {
        keep_early(p, h, int32_t(slot));
        return;
    }
    if (agrees(o, h.len, h.imm)) {
        if (h.len > 0) {
            std::memcpy(o->buf, recv_buf(slot) + sizeof h, h.len);
        }
        complete(o, LOOM_SUCCESS, h.len);
    }
    repost(p, slot);
}

void verbs_endpoint::on_rts(peer& p, const wire_header& h) {
    op* o = p.match.take_posted(h.tag);
    if (o == nullptr) {
        keep_early(p, h, -1);
    } else if (agrees(o, h.len, h.imm)) {
        clear_to_send(p, o, h.token);
    } else {
        wire_header nack{};
        nack.type  = uint32_t(msg_type::nack);
        nack.tag   = h.tag;
        nack.token = h.token;
        reply(p, nack);
    }
}

void verbs_endpoint::clear_to_send(peer& p, op* o, uint32_t token) {
    auto region = cache_.acquire(o->buf, o->len);
    if (!region) {
        fail_peer(p, "cannot register a receive buffer: " + region.error().message());
        return;
    }
    o->mr    = *region;
    o->state = op_state::recv_awaiting;
    wire_header cts{};
    cts.type       = uint32_t(msg_type::cts);
    cts.tag        = o->tag;
    cts.len        = o->len;
    cts.token      = token;
    cts.addr       = reinterpret_cast<uintptr_t>(o->buf);
    cts.rkey       = o->mr->handle->rkey;
    cts.recv_index = index(o);
    reply(p, cts);
}

void verbs_endpoint::on_cts(peer& p, const wire_header& h) {
    op* o = match_.at(h.token);
    if (o == nullptr || o->idle || o->peer != p.rank || o->state != op_state::send_rts ||
        h.len != o->len) {
        fail_peer(p, "a clear-to-send names no message awaiting one (operation " +
                         std::to_string(h.token) + ")");
        return;
    }
    post_write(p, o, h.addr, h.rkey, h.recv_index);
}

void verbs_endpoint::post_write(peer& p, op* o, uint64_t addr, uint32_t rkey, uint32_t recv_index) {
    uint32_t lkey = 0;
    if (o->copy_mr != nullptr) {
        lkey = o->copy_mr->lkey;
    } else {
        auto region = cache_.acquire(o->buf, o->len);
        if (!region) {
            fail_peer(p, "cannot register a send buffer: " + region.error().message());
            return;
        }
        o->mr = *region;
        lkey  = o->mr->handle->lkey;
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(o->buf), uint32_t(o->len), lkey};
    ibv_send_wr wr{};
    wr.wr_id               = wr_id_of(wr_kind::write, p.rank, index(o));
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.opcode              = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.imm_data            = htonl(recv_index);
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey        = rkey;
    o->state               = op_state::send_writing;
    ibv_send_wr* bad       = nullptr;
    if (int rc = api_.post_send(p.qp, &wr, &bad)) {
        fail_peer(p, std::string("ibv_post_send of an RDMA write failed: ") + std::strerror(rc));
    }
}

void verbs_endpoint::on_write_arrived(peer& p, uint32_t recv_index, uint32_t byte_len) {
    op* o = match_.at(recv_index);
    if (o == nullptr || o->idle || o->peer != p.rank || o->state != op_state::recv_awaiting ||
        byte_len != o->len) {
        fail_peer(p, "an RDMA write's immediate names no receive awaiting it (operation " +
                         std::to_string(recv_index) + ")");
        return;
    }
    complete(o, LOOM_SUCCESS, byte_len);
}

void verbs_endpoint::on_nack(peer& p, const wire_header& h) {
    op* o = match_.at(h.token);
    if (o == nullptr || o->idle || o->peer != p.rank || o->state != op_state::send_rts) {
        fail_peer(p, "a refusal names no message awaiting one (operation " +
                         std::to_string(h.token) + ")");
        return;
    }
    complete(o, LOOM_SUCCESS, o->len);  // the receive reported the mismatch
}

void verbs_endpoint::on_control(peer& p, const wire_header& h) {
    op* o = match_.take(p.rank, h.tag, h.imm, nullptr, 0, control_cookie);
    if (o == nullptr) {
        LOOM_LOG_WARN(log::subsystem::net,
                      "verbs: rank %d: a control notice from rank %d dropped: %u operations "
                      "held",
                      config_.rank, p.rank, unsigned(match_.in_use()));
        return;
    }
    o->state = op_state::recv_posted;
    match_.complete(o, LOOM_SUCCESS, 0);
}

bool verbs_endpoint::post_buf(peer& p, uint32_t slot, size_t bytes) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(send_buf(slot)), uint32_t(bytes), send_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id         = wr_id_of(wr_kind::send_buf, p.rank, slot);
    wr.sg_list       = &sge;
    wr.num_sge       = 1;
    wr.opcode        = IBV_WR_SEND;
    wr.send_flags    = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int rc = api_.post_send(p.qp, &wr, &bad)) {
        (slot - p.send_base < settings_.send_queue ? p.free_sends : p.free_replies).push_back(slot);
        send_slot_op_[slot] = nullptr;
        fail_peer(p, std::string("ibv_post_send failed: ") + std::strerror(rc));
        return false;
    }
    return true;
}

void verbs_endpoint::reply(peer& p, const wire_header& h) {
    if (p.free_replies.empty()) {
        if (p.replies_waiting.size() == p.replies_waiting.capacity()) {
            fail_peer(p, "more replies waiting than its sends allow");
            return;
        }
        p.replies_waiting.push_back(pending_reply{h});
        return;
    }
    uint32_t slot = p.free_replies.back();
    p.free_replies.pop_back();
    std::memcpy(send_buf(slot), &h, sizeof h);
    send_slot_op_[slot] = nullptr;
    post_buf(p, slot, sizeof h);
}

void verbs_endpoint::flush_replies(peer& p) {
    size_t sent = 0;
    while (sent < p.replies_waiting.size() && !p.free_replies.empty() && !p.failed) {
        reply(p, p.replies_waiting[sent++].h);
    }
    p.replies_waiting.erase(p.replies_waiting.begin(),
                            p.replies_waiting.begin() + std::ptrdiff_t(sent));
}

void verbs_endpoint::repost(peer& p, uint32_t slot) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf(slot)), uint32_t(buf_bytes_), recv_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id         = wr_id_of(wr_kind::recv, p.rank, slot);
    wr.sg_list       = &sge;
    wr.num_sge       = 1;
    ibv_recv_wr* bad = nullptr;
    if (int rc = api_.post_recv(p.qp, &wr, &bad)) {
        fail_peer(p, std::string("ibv_post_recv failed: ") + std::strerror(rc));
    }
}

}  // namespace loom::drivers::verbs
