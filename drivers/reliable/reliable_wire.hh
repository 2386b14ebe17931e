// SPDX-License-Identifier: Apache-2.0
// The wire format of the reliable protocol: one fixed 88-byte header before each frame's
// payload, every field in network byte order (base/byte_order.hh), defined byte by byte so it
// reads the same on every host and through a DPU router that rewrites only `vc`.
//
//  offset size field
//   0     2   magic 0x4c52 ("LR")
//   2     1   version (1)
//   3     1   kind: data, ack, hello, hello_ack, goodbye, rts, cts (frame_kind)
//   4     1   virtual channel: 0 from senders; routers set it
//   5     1   flags (flag_*: ack valid, ping, rendezvous data, discard, stalled)
//   6     2   body bytes after the header in this frame
//   8     4   source rank
//  12     4   destination rank
//  16     8   job key (frames of another job are dropped and counted)
//  24     4   source incarnation (random per endpoint)
//  28     4   destination incarnation as the source knows it (0 in a hello)
//  32     4   sequence number, per (source, destination); hello/hello_ack: the first one
//  36     4   cumulative ack: the next sequence number the source expects from the destination
//  40     8   SACK: bit i set = frame ack + 1 + i arrived and waits in the source's window
//  48     4   message id (data, rts, cts), per (source, destination)
//  52     4   checksum: crc32c of the body, continued over the header with this field and
//             the vc byte zero (a router rewrites the vc without resealing the frame)
//  56     8   tag
//  64     8   imm
//  72     8   message length
//  80     8   segment offset of this frame's body in the message
//
// The checksum covers header and payload: with SSE4.2 crc32c runs at several bytes per cycle,
// less than the copy the link makes anyway, and a router or a bad cable that flips a payload
// bit must not deliver wrong data silently. Data, rts and cts frames carry sequence numbers
// and are retransmitted; ack, hello, hello_ack and goodbye do not (they are repeated instead).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/byte_order.hh"
#include "base/crc32c.hh"

namespace loom::drivers::reliable {

constexpr uint16_t wire_magic   = 0x4c52;
constexpr uint8_t wire_version  = 1;
constexpr size_t header_bytes   = 88;
constexpr size_t checksum_field = 52;
constexpr size_t vc_field       = 4;  // the one byte a router rewrites (not checksummed)

enum class frame_kind : uint8_t {
    data      = 1,  // a segment of a message (eager, or rendezvous data after a cts)
    ack       = 2,  // acknowledgement only (flag_ping: the peer asks for one)
    hello     = 3,  // connect: my incarnation and first sequence number
    hello_ack = 4,  // the answer, echoing the hello's incarnation
    goodbye   = 5,  // the endpoint closes: fail what is outstanding toward it (answered)
    rts       = 6,  // request to send a large message (tag, imm, length; no body)
    cts       = 7,  // clear to send message id (flag_discard: the receive mismatched)
};
constexpr uint8_t max_kind = 7;

constexpr uint8_t flag_ack      = 1;   // the ack and SACK fields are valid
constexpr uint8_t flag_ping     = 2;   // ack: please answer with an ack
constexpr uint8_t flag_rndv     = 4;   // data: of a rendezvous message (its id names the receive)
constexpr uint8_t flag_discard  = 8;   // cts: the receive mismatched, complete the send unsent
constexpr uint8_t flag_stalled  = 16;  // ack: the source holds the next frame until it has room
constexpr uint8_t flag_farewell = 32;  // ack: the answer to a goodbye (its acks were heard)

struct header {
    uint8_t kind  = 0;
    uint8_t vc    = 0;
    uint8_t flags = 0;
    uint16_t body = 0;
    uint32_t src = 0, dst = 0;
    uint64_t key     = 0;
    uint32_t src_inc = 0, dst_inc = 0;
    uint32_t seq = 0, ack = 0;
    uint64_t sack   = 0;
    uint32_t msg_id = 0;
    uint32_t csum   = 0;
    uint64_t tag = 0, imm = 0, msg_len = 0, offset = 0;
};

using loom::crc32c;  // the frames' checksum (base/crc32c.hh)

inline void encode(const header& h, uint8_t* p) {
    be::put16(p, wire_magic);
    p[2] = wire_version;
    p[3] = h.kind;
    p[4] = h.vc;
    p[5] = h.flags;
    be::put16(p + 6, h.body);
    be::put32(p + 8, h.src);
    be::put32(p + 12, h.dst);
    be::put64(p + 16, h.key);
    be::put32(p + 24, h.src_inc);
    be::put32(p + 28, h.dst_inc);
    be::put32(p + 32, h.seq);
    be::put32(p + 36, h.ack);
    be::put64(p + 40, h.sack);
    be::put32(p + 48, h.msg_id);
    be::put32(p + 52, 0);
    be::put64(p + 56, h.tag);
    be::put64(p + 64, h.imm);
    be::put64(p + 72, h.msg_len);
    be::put64(p + 80, h.offset);
}

/// Rewrites the ack fields of an encoded header (a retransmission carries the newest).
inline void encode_ack(uint8_t* p, uint32_t ack, uint64_t sack) {
    be::put32(p + 36, ack);
    be::put64(p + 40, sack);
}

/// Seals an encoded header: the checksum of `body_crc` (crc32c of the body) continued over
/// the header with its checksum field and its vc byte zero (a router rewrites the vc on the
/// way, and must not have to reseal the frame).
inline void seal(uint8_t* p, uint32_t body_crc) {
    uint8_t vc  = p[vc_field];
    p[vc_field] = 0;
    be::put32(p + checksum_field, 0);
    be::put32(p + checksum_field, crc32c(body_crc, p, header_bytes));
    p[vc_field] = vc;
}

/// Why a frame was refused before its kind was looked at.
enum class parse_result { ok, truncated, bad_magic, bad_checksum };

/// Checks and decodes a frame of `len` bytes. The checksum is verified over a copy of the
/// header, so the frame itself is never written.
inline parse_result decode(const uint8_t* p, size_t len, header* h) {
    if (len < header_bytes) {
        return parse_result::truncated;
    }
    if (be::get16(p) != wire_magic || p[2] != wire_version || p[3] == 0 || p[3] > max_kind) {
        return parse_result::bad_magic;
    }
    h->body = be::get16(p + 6);
    if (len != header_bytes + h->body) {
        return parse_result::truncated;
    }
    uint8_t copy[header_bytes];
    for (size_t i = 0; i < header_bytes; ++i) {
        copy[i] = p[i];
    }
    uint32_t sent = be::get32(p + checksum_field);
    be::put32(copy + checksum_field, 0);
    copy[vc_field] = 0;  // routers rewrite it (seal)
    if (crc32c(crc32c(0, p + header_bytes, h->body), copy, header_bytes) != sent) {
        return parse_result::bad_checksum;
    }
    h->kind    = p[3];
    h->vc      = p[4];
    h->flags   = p[5];
    h->src     = be::get32(p + 8);
    h->dst     = be::get32(p + 12);
    h->key     = be::get64(p + 16);
    h->src_inc = be::get32(p + 24);
    h->dst_inc = be::get32(p + 28);
    h->seq     = be::get32(p + 32);
    h->ack     = be::get32(p + 36);
    h->sack    = be::get64(p + 40);
    h->msg_id  = be::get32(p + 48);
    h->csum    = sent;
    h->tag     = be::get64(p + 56);
    h->imm     = be::get64(p + 64);
    h->msg_len = be::get64(p + 72);
    h->offset  = be::get64(p + 80);
    return parse_result::ok;
}

/// Sequence numbers wrap: a is before b when the signed distance is negative.
inline bool seq_before(uint32_t a, uint32_t b) {
    return int32_t(a - b) < 0;
}

}  // namespace loom::drivers::reliable
