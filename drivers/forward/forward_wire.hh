// SPDX-License-Identifier: Apache-2.0
// The forwarding wrapper's wire form on one link (forward.hh "Wire format"): the chunk
// header, its flags, the inner tags of a link's chunks, and the inner cookies that say
// which of the wrapper's own operations an inner completion belongs to.
#pragma once

#include <cstdint>

namespace loom::drivers::forward {

constexpr uint32_t flag_control   = 1;
constexpr uint32_t flag_withdrawn = 2;  // the payload was revoked on the way: void
constexpr uint32_t flag_vc1       = 4;  // the hop this header travels is on VC1 (dateline.hh)

struct header {
    int32_t src;
    int32_t dst;
    uint64_t tag;
    uint64_t imm;
    uint64_t total;
    uint64_t offset;
    uint32_t len;
    uint32_t flags;
};
static_assert(sizeof(header) == 48);

// Inner cookies: kind in the top byte, index below.
enum kind : uint64_t { k_hdr_rx = 1, k_pay_rx = 2, k_tx_hdr = 3, k_tx_pay = 4, k_self = 5 };
constexpr uint64_t cookie_of(kind k, uint64_t i) {
    return (uint64_t(k) << 56) | i;
}
constexpr uint64_t tag_hdr(uint32_t seq) {
    return uint64_t(seq & 0x7fffffffu) * 2;
}

}  // namespace loom::drivers::forward
