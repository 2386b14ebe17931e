// SPDX-License-Identifier: Apache-2.0
// CRC32C (crc32c.hh).
#include "crc32c.hh"

#include <array>
#include <cstring>

namespace loom {
namespace {

// The reflected Castagnoli polynomial's table, built at compile time.
constexpr std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) {
            c = (c & 1) != 0 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        }
        t[i] = c;
    }
    return t;
}();

uint32_t by_table(uint32_t c, const uint8_t* p, size_t len) {
    for (; len > 0; --len, ++p) {
        c = table[(c ^ *p) & 0xff] ^ (c >> 8);
    }
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t by_instruction(uint32_t c32, const uint8_t* p,
                                                          size_t len) {
    uint64_t c = c32;
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    c32 = uint32_t(c);
    for (; len > 0; --len, ++p) {
        c32 = __builtin_ia32_crc32qi(c32, *p);
    }
    return c32;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
    static const bool hw = __builtin_cpu_supports("sse4.2");
    return ~(hw ? by_instruction(~crc, p, len) : by_table(~crc, p, len));
#else
    return ~by_table(~crc, p, len);
#endif
}

}  // namespace loom
