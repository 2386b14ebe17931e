// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the in-network packet decoder (loom::inc::parse), the first code a
// hostile peer's bytes reach on the aggregation node and on every client.
//
// Each input is decoded twice: as it is, and with its checksum made right, since random
// bytes almost never carry a valid CRC and the checks after it would go unexercised.
#include <cstdint>
#include <cstring>
#include <vector>

#include "inc/protocol/packet.hh"

namespace {

using namespace loom::inc;

void decode(const std::vector<uint8_t>& packet) {
    header h{};
    const uint8_t* payload = nullptr;
    parse_error e          = parse(packet.data(), packet.size(), &h, &payload);
    (void)parse_error_name(e);
    if (e != parse_error::none) {
        return;
    }
    // What parse accepted must lie inside the packet and re-encode to the same bytes (the
    // decoder and the encoder agree on every field).
    size_t n = payload_bytes(h);
    if (payload != packet.data() + header_bytes || header_bytes + n != packet.size()) {
        __builtin_trap();
    }
    std::vector<uint8_t> again(header_bytes + n);
    size_t len = encode(h, payload, again.data());
    if (len != packet.size()) {
        __builtin_trap();
    }
    // Kinds without elements may leave dtype and op (bytes 6, 7) unread, so the checksum
    // (the last 4 header bytes) may differ too; every other byte must match.
    bool loose = !carries_elements(h.kind);
    for (size_t i = 0; i < len; ++i) {
        bool unread = loose && (i == 6 || i == 7 || (i >= header_bytes - 4 && i < header_bytes));
        if (!unread && again[i] != packet[i]) {
            __builtin_trap();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // A copy of exactly `size` bytes, so that a read past the end is an ASan report.
    std::vector<uint8_t> packet(data, data + size);
    decode(packet);
    if (size >= header_bytes) {
        constexpr size_t at = header_bytes - 4;  // the checksum field, big-endian
        std::memset(packet.data() + at, 0, 4);
        uint32_t crc = crc32c(0, packet.data(), packet.size());
        for (int i = 0; i < 4; ++i) {
            packet[at + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
        }
        decode(packet);
    }
    return 0;
}
