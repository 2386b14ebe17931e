// The control conversation with an aggregation node (loom-switch): the join request's
// payload, and the client side of join / leave / stats_query over a link.
//
// join payload (24 bytes, big-endian u32 each, like the header):
//   members         contributor ids at this node: 0..members-1 (comm ranks at a leaf)
//   expected        contributions that complete an entry (the ranks under this node)
//   slots           aggregation slots asked for (the joined reply's slot = granted)
//   flags           join_deterministic; join_from_node: the joiner is a child node
//   parent_members  0: the node answers itself; else the node joins its parent as member
//   parent_index    parent_index of a group of parent_members (the tree's next level)
// then, from a member holding the job's ticket (ticket.hh), 32 bytes of MAC:
//   HMAC-SHA-256(ticket, "loom-inc-join" | nonce | job | comm | member | the 24 bytes)
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
#include "inc/node/ticket.hh"
#include "inc/protocol/packet.hh"

namespace loom::inc {

class link;

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
digest256 join_mac(std::span<const uint8_t> ticket, const join_nonce& nonce, uint32_t job,
                   uint32_t comm, uint32_t member, const join_request& r);
/// Builds a join packet into `out` (header_bytes + signed_join_bytes at least): signed with
/// `ticket` over `nonce`, or unsigned when the ticket is empty; returns its length.
size_t join_packet(uint32_t job, uint32_t comm, uint32_t member, const join_request& r,
                   const join_nonce& nonce, std::string_view ticket, uint8_t* out);
/// The challenge a node sends a link it accepted; false when `h` is not one.
bool read_challenge(const header& h, const uint8_t* body, join_nonce* nonce);
/// Waits (timeout_s at most) for the node's challenge on a new link; other packets dropped.
bool await_challenge(link& l, double timeout_s, join_nonce* nonce);

/// Builds a control packet (join, leave, stats_query, …) with a byte payload into `out`
/// (header_bytes + text.size() bytes); returns its length.
size_t control_packet(packet_kind kind, uint32_t job, uint32_t comm, uint32_t member,
                      std::string_view payload, uint8_t* out);

/// On a new link: waits for the node's challenge, sends a join for (job, comm) as `member`
/// (signed with `ticket`, the raw 32 bytes, unless empty) and waits for the answer: the
/// slots granted, or the nack's code and reason, or LOOM_ERR_TIMEOUT. Packets of other
/// kinds are dropped.
result<uint32_t> join_node(link& l, uint32_t job, uint32_t comm, uint32_t member,
                           const join_request& r, double timeout_s, std::string_view ticket = {});
/// Tells the node this member is done with (job, comm).
void leave_node(link& l, uint32_t job, uint32_t comm, uint32_t member);
/// Connects to a node, asks for its statistics and returns the text.
result<std::string> query_stats(std::string_view address, double timeout_s);

}  // namespace loom::inc
