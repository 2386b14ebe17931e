// SPDX-License-Identifier: Apache-2.0
// The in-network aggregation protocol: one packet format shared by the endpoints (client)
// and the aggregation nodes (aggregator, loom-switch, the DPU data plane).
//
// A packet is a 56-byte header and, for contributions and results, `count` elements of
// `dtype` (at most max_payload_bytes). On the wire every header field is big-endian
// (network order), written and read byte by byte by encode()/parse(), so the format does
// not depend on the host's byte order or struct layout; wire_header below only fixes the
// offsets (packed, sizes checked at compile time). Payload elements travel in the sender's
// native (little-endian x86/Arm) order: the aggregator adds them as they come, and a
// big-endian peer is refused at admission rather than swapped per element on the hot path.
//
// Fields
//   magic 0x4c4d4e43 ("LMNC"); version 2 (a node drops other versions and counts them,
//   never guesses); kind (contribute, result, ack, …); dtype and op in
//   loom.h's values; flags; job and communicator ids, 64 bits each, hashed from whole
//   names (ticket.hh: a node serves several jobs and tells them apart by these ids alone;
//   slots of different communicators never mix); seq: the collective's sequence number in the
//   communicator; slot: the aggregation slot the chunk goes through; offset: the chunk's
//   first element in the whole vector; count: its elements; contributor: the sender's rank
//   in the communicator (the aggregator's bitmap index); checksum: CRC32C of the header
//   (checksum field zero) and the payload, so corruption and truncation are caught before a
//   byte is reduced.
#pragma once

#include <loom/loom.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/crc32c.hh"

namespace loom::inc {

constexpr uint32_t packet_magic    = 0x4c4d4e43u;  // "LMNC"
constexpr uint8_t packet_version   = 2;
constexpr size_t header_bytes      = 56;
constexpr size_t max_payload_bytes = 8192;  // one slot's chunk: 2048 float32

enum class packet_kind : uint8_t {
    contribute = 1,  // client → aggregator: my chunk for (seq, slot, offset)
    result     = 2,  // aggregator → clients: the reduced chunk
    ack        = 3,  // client → aggregator: result of (seq, slot) received
    nack       = 4,  // node → client: refused, or the group broke (switch_node.hh); child
                     // node → parent: the group broke below. Payload: the reason (text)
    // Control (payload: `count` bytes, below). They share the data path so one connection
    // carries a member's whole conversation with its node.
    join        = 5,   // client → node: admit me (payload: join_request)
    joined      = 6,   // node → client: admitted (slot = slots granted)
    leave       = 7,   // client → node: my communicator is done
    stats_query = 8,   // anyone → node: send your statistics
    stats_reply = 9,   // node → asker: statistics (payload: text, one "name value" a line)
    challenge   = 10,  // node → new link: a fresh nonce the link's joins must sign (join.hh)
};
constexpr uint8_t last_packet_kind = 10;

/// True for contribute and result, whose payload is `count` elements; every other kind's
/// payload is `count` bytes (ack: none).
inline bool carries_elements(packet_kind k) {
    return k == packet_kind::contribute || k == packet_kind::result;
}

enum packet_flags : uint16_t {
    flag_deterministic = 1,  // reduce the contributions in rank order (bitwise reproducible)
    flag_resend        = 2,  // a retransmission (statistics only)
    flag_last_chunk    = 4,  // the final chunk of the collective's vector
    // The collective's shape (every contribution carries it; an entry keeps the first's):
    flag_no_data = 8,     // a contribution or result without payload (count elements still
                          // name the chunk): a broadcast's non-root, a reduce's non-root result
    flag_to_root   = 16,  // reduce: only `root` gets the result's data, the others a notice
    flag_from_root = 32,  // broadcast: the result is `root`'s data; the others send no data
};

/// A header in host form.
struct header {
    packet_kind kind     = packet_kind::contribute;
    loom_dtype_t dtype   = LOOM_FLOAT32;
    loom_op_t op         = LOOM_SUM;
    uint16_t flags       = 0;
    uint16_t root        = 0;  // reduce/broadcast root (flag_to_root / flag_from_root)
    uint64_t job         = 0;
    uint64_t comm        = 0;
    uint32_t seq         = 0;
    uint32_t slot        = 0;
    uint64_t offset      = 0;  // elements
    uint32_t count       = 0;  // elements in this packet
    uint32_t contributor = 0;
};

/// The wire layout: field offsets only (encode/parse go byte by byte, big-endian).
struct __attribute__((packed)) wire_header {
    uint8_t magic[4];
    uint8_t version;
    uint8_t kind;
    uint8_t dtype;
    uint8_t op;
    uint8_t flags[2];
    uint8_t root[2];
    uint8_t job[8];
    uint8_t comm[8];
    uint8_t seq[4];
    uint8_t slot[4];
    uint8_t offset[8];
    uint8_t count[4];
    uint8_t contributor[4];
    uint8_t checksum[4];
};
static_assert(sizeof(wire_header) == header_bytes, "the wire header is 56 bytes");
static_assert(offsetof(wire_header, checksum) == header_bytes - 4, "checksum is last");
static_assert(header_bytes % 8 == 0, "payloads start 8-byte aligned after the header");

/// Why parse() refused a packet (each has a counter on the aggregation node).
enum class parse_error : uint8_t {
    none,
    truncated,  // shorter than a header, or than the header says
    bad_magic,
    bad_version,
    bad_kind,
    bad_dtype,  // unknown, or not one the aggregator reduces
    bad_op,
    too_large,   // payload over max_payload_bytes
    bad_length,  // payload length differs from count × element size
    bad_checksum,
};
std::string_view parse_error_name(parse_error e);

/// Bytes of one element of the dtypes the protocol carries (int32, int64, float32,
/// float64, bfloat16, float16); 0 for any other.
size_t element_bytes(loom_dtype_t dtype);
/// Payload bytes of a packet with this header: count × element size for contribute/result
/// (0 with flag_no_data), count bytes for the other kinds.
size_t payload_bytes(const header& h);

/// Writes header + payload (payload_bytes(h) of them) into `out`, which holds at least
/// header_bytes + payload_bytes(h); returns the packet length.
size_t encode(const header& h, const void* payload, uint8_t* out);

/// Checks and decodes a received packet of `len` bytes. On success *payload points into
/// `packet` after the header.
parse_error parse(const uint8_t* packet, size_t len, header* out, const uint8_t** payload);

using loom::crc32c;  // the packets' checksum (base/crc32c.hh)

}  // namespace loom::inc
