// SPDX-License-Identifier: Apache-2.0
// Encoding and length-checked parsing of inc packets (packet.hh).
#include "inc/protocol/packet.hh"

#include <cstring>

#include "base/byte_order.hh"

namespace loom::inc {
namespace {

using be::get16;
using be::get32;
using be::get64;
using be::put16;
using be::put32;
using be::put64;

}  // namespace

std::string_view parse_error_name(parse_error e) {
    // In parse_error's order.
    static constexpr std::string_view names[] = {
        "none",        "truncated",         "bad magic",
        "bad version", "bad kind",          "bad dtype",
        "bad op",      "payload too large", "payload length differs from count",
        "bad checksum"};
    return size_t(e) < std::size(names) ? names[size_t(e)] : "?";
}

size_t element_bytes(loom_dtype_t dtype) {
    switch (dtype) {
        case LOOM_INT32:
        case LOOM_FLOAT32:
            return 4;
        case LOOM_INT64:
        case LOOM_FLOAT64:
            return 8;
        case LOOM_FLOAT16:
        case LOOM_BFLOAT16:
            return 2;
        default:
            return 0;
    }
}

size_t payload_bytes(const header& h) {
    if (!carries_elements(h.kind)) {
        return h.count;
    }
    return (h.flags & flag_no_data) != 0 ? 0 : size_t(h.count) * element_bytes(h.dtype);
}

size_t encode(const header& h, const void* payload, uint8_t* out) {
    size_t n = payload_bytes(h);
    put32(out + offsetof(wire_header, magic), packet_magic);
    out[offsetof(wire_header, version)] = packet_version;
    out[offsetof(wire_header, kind)]    = uint8_t(h.kind);
    out[offsetof(wire_header, dtype)]   = uint8_t(h.dtype);
    out[offsetof(wire_header, op)]      = uint8_t(h.op);
    put16(out + offsetof(wire_header, flags), h.flags);
    put16(out + offsetof(wire_header, root), h.root);
    put64(out + offsetof(wire_header, job), h.job);
    put64(out + offsetof(wire_header, comm), h.comm);
    put32(out + offsetof(wire_header, seq), h.seq);
    put32(out + offsetof(wire_header, slot), h.slot);
    put64(out + offsetof(wire_header, offset), h.offset);
    put32(out + offsetof(wire_header, count), h.count);
    put32(out + offsetof(wire_header, contributor), h.contributor);
    put32(out + offsetof(wire_header, checksum), 0);
    if (n > 0) {
        std::memcpy(out + header_bytes, payload, n);
    }
    uint32_t crc = crc32c(0, out, header_bytes + n);
    put32(out + offsetof(wire_header, checksum), crc);
    return header_bytes + n;
}

parse_error parse(const uint8_t* packet, size_t len, header* out, const uint8_t** payload) {
    if (len < header_bytes) {
        return parse_error::truncated;
    }
    if (get32(packet + offsetof(wire_header, magic)) != packet_magic) {
        return parse_error::bad_magic;
    }
    if (packet[offsetof(wire_header, version)] != packet_version) {
        return parse_error::bad_version;
    }
    header h;
    uint8_t kind = packet[offsetof(wire_header, kind)];
    if (kind < uint8_t(packet_kind::contribute) || kind > last_packet_kind) {
        return parse_error::bad_kind;
    }
    // The dtype and op bytes are range-checked before they become enum values: an
    // out-of-range value in an enum without a fixed underlying type is undefined behaviour.
    uint8_t dtype = packet[offsetof(wire_header, dtype)];
    uint8_t op    = packet[offsetof(wire_header, op)];
    if (dtype >= uint8_t(LOOM_DTYPE_COUNT)) {
        return parse_error::bad_dtype;
    }
    if (op >= uint8_t(LOOM_OP_COUNT)) {
        return parse_error::bad_op;
    }
    h.kind        = packet_kind(kind);
    h.dtype       = loom_dtype_t(dtype);
    h.op          = loom_op_t(op);
    h.flags       = get16(packet + offsetof(wire_header, flags));
    h.root        = get16(packet + offsetof(wire_header, root));
    h.job         = get64(packet + offsetof(wire_header, job));
    h.comm        = get64(packet + offsetof(wire_header, comm));
    h.seq         = get32(packet + offsetof(wire_header, seq));
    h.slot        = get32(packet + offsetof(wire_header, slot));
    h.offset      = get64(packet + offsetof(wire_header, offset));
    h.count       = get32(packet + offsetof(wire_header, count));
    h.contributor = get32(packet + offsetof(wire_header, contributor));
    bool carries  = carries_elements(h.kind);
    if (carries && element_bytes(h.dtype) == 0) {
        return parse_error::bad_dtype;
    }
    if (carries && h.op != LOOM_SUM && h.op != LOOM_MIN && h.op != LOOM_MAX) {
        return parse_error::bad_op;
    }
    // 64-bit product: a hostile count cannot wrap the length check.
    uint64_t n = !carries                        ? uint64_t(h.count)
                 : (h.flags & flag_no_data) != 0 ? 0
                                                 : uint64_t(h.count) * element_bytes(h.dtype);
    if (n > max_payload_bytes) {
        return parse_error::too_large;
    }
    if (len != header_bytes + n) {
        return len < header_bytes + n ? parse_error::truncated : parse_error::bad_length;
    }
    uint32_t want   = get32(packet + offsetof(wire_header, checksum));
    uint8_t zero[4] = {0, 0, 0, 0};
    uint32_t crc    = crc32c(0, packet, offsetof(wire_header, checksum));
    // Continue the CRC over a zeroed checksum field and the payload without copying
    // (crc32c(crc32c(0, a), b) is the CRC of a then b).
    crc = crc32c(crc, zero, 4);
    crc = crc32c(crc, packet + header_bytes, n);
    if (crc != want) {
        return parse_error::bad_checksum;
    }
    *out = h;
    if (payload != nullptr) {
        *payload = packet + header_bytes;
    }
    return parse_error::none;
}

}  // namespace loom::inc
