// SPDX-License-Identifier: Apache-2.0
// The join payload and the client side of a node's control packets (join.hh).
#include "inc/node/join.hh"

#include <sched.h>

#include <cstring>
#include <vector>

#include "base/byte_order.hh"
#include "base/clock.hh"
#include "drivers/datagram.hh"

namespace loom::inc {
namespace {

using be::get32;
using be::put32;
using be::put64;

// The next well-formed packet on `l`: false (after a yield) when none is waiting, or when
// what came does not parse (it is dropped).
bool next_packet(drivers::datagram_endpoint& l, header* h, const uint8_t** body) {
    const uint8_t* p = nullptr;
    size_t len       = 0;
    if (!l.recv(&p, &len)) {
        sched_yield();
        return false;
    }
    return parse(p, len, h, body) == parse_error::none;
}

// Waits for the first packet of `kind` (job and communicator 0: the node's own); other
// packets are dropped: before a join completes nothing else is addressed to us.
bool await(drivers::datagram_endpoint& l, packet_kind kind, double timeout_s,
           std::string* payload) {
    deadline until(timeout_s);
    while (!until.expired() && l.alive()) {
        header h;
        const uint8_t* body = nullptr;
        if (next_packet(l, &h, &body) && h.kind == kind && h.job == 0 && h.comm == 0) {
            payload->assign(reinterpret_cast<const char*>(body), payload_bytes(h));
            return true;
        }
    }
    return false;
}

}  // namespace

void encode_join(const join_request& r, uint8_t* out) {
    const uint32_t v[] = {r.members, r.expected,       r.slots,
                          r.flags,   r.parent_members, r.parent_index};
    for (size_t i = 0; i < 6; ++i) {
        put32(out + 4 * i, v[i]);
    }
}

bool decode_join(const uint8_t* p, size_t len, join_request* out, const uint8_t** mac) {
    if (len != join_request_bytes && len != signed_join_bytes) {
        return false;
    }
    *out = join_request{.members        = get32(p),
                        .expected       = get32(p + 4),
                        .slots          = get32(p + 8),
                        .flags          = get32(p + 12),
                        .parent_members = get32(p + 16),
                        .parent_index   = get32(p + 20)};
    *mac = len == signed_join_bytes ? p + join_request_bytes : nullptr;
    return true;
}

digest256 join_mac(std::span<const uint8_t> ticket, const join_nonce& nonce, uint64_t job,
                   uint64_t comm, uint32_t member, const join_request& r) {
    static constexpr char label[] = "loom-inc-join";
    uint8_t msg[sizeof label - 1 + nonce_bytes + 20 + join_request_bytes];
    uint8_t* at = msg;
    std::memcpy(at, label, sizeof label - 1);
    at += sizeof label - 1;
    std::memcpy(at, nonce.data(), nonce_bytes);
    at += nonce_bytes;
    put64(at, job);
    put64(at + 8, comm);
    put32(at + 16, member);
    at += 20;
    encode_join(r, at);
    return hmac_sha256(ticket, std::span<const uint8_t>(msg, sizeof msg));
}

size_t join_packet(uint64_t job, uint64_t comm, uint32_t member, const join_request& r,
                   const join_nonce& nonce, std::string_view ticket, uint8_t* out) {
    uint8_t body[signed_join_bytes];
    encode_join(r, body);
    size_t n = join_request_bytes;
    if (!ticket.empty()) {
        auto key      = std::span(reinterpret_cast<const uint8_t*>(ticket.data()), ticket.size());
        digest256 mac = join_mac(key, nonce, job, comm, member, r);
        std::memcpy(body + join_request_bytes, mac.data(), mac_bytes);
        n = signed_join_bytes;
    }
    return control_packet(packet_kind::join, job, comm, member,
                          std::string_view(reinterpret_cast<const char*>(body), n), out);
}

bool read_challenge(const header& h, const uint8_t* body, join_nonce* nonce) {
    if (h.kind != packet_kind::challenge || h.count != nonce_bytes) {
        return false;
    }
    std::memcpy(nonce->data(), body, nonce_bytes);
    return true;
}

bool await_challenge(drivers::datagram_endpoint& l, double timeout_s, join_nonce* nonce) {
    std::string text;
    if (!await(l, packet_kind::challenge, timeout_s, &text) || text.size() != nonce_bytes) {
        return false;
    }
    std::memcpy(nonce->data(), text.data(), nonce_bytes);
    return true;
}

size_t control_packet(packet_kind kind, uint64_t job, uint64_t comm, uint32_t member,
                      std::string_view payload, uint8_t* out, uint32_t seq, uint32_t slot) {
    header h{.kind        = kind,
             .job         = job,
             .comm        = comm,
             .seq         = seq,
             .slot        = slot,
             .count       = uint32_t(payload.size()),
             .contributor = member};
    return encode(h, payload.data(), out);
}

joiner::joiner(uint64_t job, uint64_t comm, uint32_t member, const join_request& r,
               std::string_view ticket, double resend_s)
    : job_(job), comm_(comm), member_(member), request_(r), ticket_(ticket), resend_s_(resend_s) {}

void joiner::tick(drivers::datagram_sink& out, double now_s) {
    if (state_ != state::awaiting_answer || now_s < next_send_ || (sent_ && resend_s_ <= 0)) {
        return;
    }
    out.send(packet_, len_);
    sent_      = true;
    next_send_ = now_s + resend_s_;
}

bool joiner::on_packet(const header& h, const uint8_t* payload) {
    if (state_ == state::awaiting_challenge) {
        join_nonce nonce{};
        if (!read_challenge(h, payload, &nonce)) {
            return false;
        }
        len_   = join_packet(job_, comm_, member_, request_, nonce, ticket_, packet_);
        state_ = state::awaiting_answer;
        return true;
    }
    if (state_ != state::awaiting_answer || h.job != job_ || h.comm != comm_ ||
        (h.kind != packet_kind::joined && h.kind != packet_kind::nack)) {
        return false;
    }
    if (h.kind == packet_kind::joined) {
        slots_ = h.slot;
        state_ = state::joined;
    } else {
        refusal_ = loom_status_t(h.seq);
        reason_.assign(reinterpret_cast<const char*>(payload), payload_bytes(h));
        state_ = state::refused;
    }
    return true;
}

result<uint32_t> join_node(drivers::datagram_endpoint& l, uint64_t job, uint64_t comm,
                           uint32_t member, const join_request& r, double timeout_s,
                           std::string_view ticket, double resend_s) {
    joiner j(job, comm, member, r, ticket, resend_s);
    // Each half (the challenge, then the answer) has timeout_s of its own.
    double deadline = now_s() + timeout_s;
    while (now_s() < deadline && l.alive()) {
        j.tick(l, now_s());
        header h;
        const uint8_t* body = nullptr;
        if (!next_packet(l, &h, &body) || !j.on_packet(h, body)) {
            continue;
        }
        if (j.current() != joiner::state::awaiting_answer) {
            break;
        }
        deadline = now_s() + timeout_s;
        j.tick(l, now_s());
    }
    std::string who = "inc: join of job " + std::to_string(job) + " communicator " +
                      std::to_string(comm) + " member " + std::to_string(member) + " at " +
                      l.describe();
    if (!l.alive() && j.current() != joiner::state::joined) {
        return status(LOOM_ERR_PEER_FAILURE, who + ": the node closed the connection");
    }
    switch (j.current()) {
        case joiner::state::awaiting_challenge:
            return status(LOOM_ERR_TIMEOUT, "inc: no challenge from the node at " + l.describe() +
                                                " within " + std::to_string(timeout_s) + " s");
        case joiner::state::awaiting_answer:
            return status(LOOM_ERR_TIMEOUT,
                          who + ": no answer within " + std::to_string(timeout_s) + " s");
        case joiner::state::refused:
            return status(j.refusal() == LOOM_SUCCESS ? LOOM_ERR_INTERNAL : j.refusal(),
                          who + ": " + j.reason());
        case joiner::state::joined:
            break;
    }
    return j.slots();
}

void leave_node(drivers::datagram_endpoint& l, uint64_t job, uint64_t comm, uint32_t member) {
    uint8_t pkt[header_bytes];
    l.send(pkt, control_packet(packet_kind::leave, job, comm, member, {}, pkt));
}

result<std::string> query_stats(std::string_view address, double timeout_s) {
    auto l = drivers::connect_datagram(address, timeout_s);
    if (!l) {
        return l.error();
    }
    uint8_t pkt[header_bytes];
    (*l)->send(pkt, control_packet(packet_kind::stats_query, 0, 0, 0, {}, pkt));
    std::string text;
    if (!await(**l, packet_kind::stats_reply, timeout_s, &text)) {
        return status(LOOM_ERR_TIMEOUT, "inc: no statistics from " + std::string(address) +
                                            " within " + std::to_string(timeout_s) + " s");
    }
    return text;
}

}  // namespace loom::inc
