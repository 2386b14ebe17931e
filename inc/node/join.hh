// SPDX-License-Identifier: Apache-2.0
// The control conversation with an aggregation node (loom-switch): the join request's
// payload, and the client side of join / leave / stats_query over a link.
//
// The member's side of the conversation is one state machine (joiner), used by
// comm/inc_offload and by join_node.
//
// join payload (24 bytes, big-endian u32 each, like the header):
//   members         contributor ids at this node: 0..members-1 (comm ranks at a leaf)
//   expected        contributions that complete an entry (the ranks under this node)
//   slots           aggregation slots asked for (the joined reply's slot = granted)
//   flags           join_deterministic; join_from_node: the joiner is a child node
//   parent_members  0: the node answers itself; else the node joins its parent as member
//   parent_index    parent_index of a group of parent_members (the tree's next level)
// then, from a member holding the job's ticket (ticket.hh), 32 bytes of MAC:
//   HMAC-SHA-256(ticket, "loom-inc-join" | nonce | job (u64) | comm (u64) | member (u32) |
//                the 24 bytes)
// with the nonce of the node's challenge on this link. A node with a key refuses a join
// without a valid MAC; an --insecure node ignores the MAC.
// A node answers joined (slot = slots) or nack (seq = the loom_status_t, payload = reason).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.hh"
#include "drivers/datagram.hh"
#include "inc/node/ticket.hh"
#include "inc/protocol/packet.hh"

namespace loom::inc {

enum join_flags : uint32_t {
    join_deterministic = 1,
    join_from_node     = 2,  // the members are child nodes (members_are_nodes)
};

struct join_request {
    uint32_t members = 1, expected = 1, slots = 1, flags = 0;
    uint32_t parent_members = 0, parent_index = 0;
    bool operator==(const join_request&) const = default;
};
constexpr size_t join_request_bytes = 24;
constexpr size_t signed_join_bytes  = join_request_bytes + mac_bytes;
using join_nonce                    = std::array<uint8_t, nonce_bytes>;

void encode_join(const join_request& r, uint8_t* out);
/// A join payload of join_request_bytes (then *mac = null) or signed_join_bytes (*mac points
/// at its MAC); false for any other length.
bool decode_join(const uint8_t* p, size_t len, join_request* out, const uint8_t** mac);
/// The MAC of a join (above).
digest256 join_mac(std::span<const uint8_t> ticket, const join_nonce& nonce, uint64_t job,
                   uint64_t comm, uint32_t member, const join_request& r);
/// Builds a join packet into `out` (header_bytes + signed_join_bytes at least): signed with
/// `ticket` over `nonce`, or unsigned when the ticket is empty; returns its length.
size_t join_packet(uint64_t job, uint64_t comm, uint32_t member, const join_request& r,
                   const join_nonce& nonce, std::string_view ticket, uint8_t* out);
/// The challenge a node sends a link it accepted; false when `h` is not one.
bool read_challenge(const header& h, const uint8_t* body, join_nonce* nonce);
/// Waits (timeout_s at most) for the node's challenge on a new link; other packets dropped.
bool await_challenge(drivers::datagram_endpoint& l, double timeout_s, join_nonce* nonce);

/// One join conversation on a link, without blocking: the node's challenge, the join that
/// signs its nonce, the node's answer. The one encoding of a member's side of the join, for
/// the communicator's offload (over a lossy link: resend_s > 0 sends the join again until
/// answered) and for join_node below (resend_s = 0: sent once).
class joiner {
  public:
    enum class state { awaiting_challenge, awaiting_answer, joined, refused };

    joiner(uint64_t job, uint64_t comm, uint32_t member, const join_request& r,
           std::string_view ticket, double resend_s);
    /// Sends the join when it is due: once the challenge came, and again every resend_s.
    void tick(drivers::datagram_sink& out, double now_s);
    /// Offers a parsed packet that arrived; true when it belonged to the conversation.
    bool on_packet(const header& h, const uint8_t* payload);

    state current() const { return state_; }
    uint32_t slots() const { return slots_; }           // joined: the slots granted
    loom_status_t refusal() const { return refusal_; }  // refused: the nack's code as sent
    const std::string& reason() const { return reason_; }

  private:
    uint64_t job_, comm_;
    uint32_t member_;
    join_request request_;
    std::string ticket_;
    double resend_s_;
    state state_                                      = state::awaiting_challenge;
    uint8_t packet_[header_bytes + signed_join_bytes] = {};
    size_t len_                                       = 0;
    double next_send_                                 = 0;
    bool sent_                                        = false;
    uint32_t slots_                                   = 0;
    loom_status_t refusal_                            = LOOM_SUCCESS;
    std::string reason_;
};

/// Builds a control packet (join, leave, stats_query, joined, nack, …) with a byte payload
/// into `out` (header_bytes + payload.size() bytes); returns its length.
size_t control_packet(packet_kind kind, uint64_t job, uint64_t comm, uint32_t member,
                      std::string_view payload, uint8_t* out, uint32_t seq = 0, uint32_t slot = 0);

/// On a new link: waits for the node's challenge, sends a join for (job, comm) as `member`
/// (signed with `ticket`, the raw 32 bytes, unless empty; again every resend_s > 0 over a
/// lossy link) and waits for the answer: the slots granted, or the nack's code and reason,
/// LOOM_ERR_TIMEOUT, or LOOM_ERR_PEER_FAILURE when the node closed the link. Packets of
/// other kinds are dropped.
result<uint32_t> join_node(drivers::datagram_endpoint& l, uint64_t job, uint64_t comm,
                           uint32_t member, const join_request& r, double timeout_s,
                           std::string_view ticket = {}, double resend_s = 0);
/// Tells the node this member is done with (job, comm).
void leave_node(drivers::datagram_endpoint& l, uint64_t job, uint64_t comm, uint32_t member);
/// Connects to a node, asks for its statistics and returns the text.
result<std::string> query_stats(std::string_view address, double timeout_s);

}  // namespace loom::inc
