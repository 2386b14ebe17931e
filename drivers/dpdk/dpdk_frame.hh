// SPDX-License-Identifier: Apache-2.0
// loom's Ethernet framing: a loom frame is one Ethernet frame of EtherType 0x88B5 (IEEE 802
// "local experimental EtherType 1": loom owns no EtherType, and this one is set aside for
// exactly such private protocols), from the port's MAC to the peer's (broadcast until the
// peer is known), and 0x88B6 for the link's own control frames. What arrives is classified
// here: a frame of another EtherType, shorter
// than the Ethernet header or longer than the link allows is dropped by the caller, who
// counts it by the verdict. Header-only: it runs per frame.
//
// Wires that pad short frames to Ethernet's 60 bytes (NICs; not memif or af_packet on veth)
// deliver a loom frame under 46 bytes with padding behind it: what travels over loom's
// links carries its own length where that matters (an in-network packet's header alone is
// 56 bytes).
#pragma once

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>

namespace loom::drivers::dpdk {

constexpr uint16_t loom_ethertype = 0x88B5;
// The link's own control frames (a hello: "my receive buffers are posted"), never handed to
// the protocol above: IEEE 802 local experimental EtherType 2, beside loom's own.
constexpr uint16_t loom_control_ethertype = 0x88B6;
constexpr size_t eth_header               = RTE_ETHER_HDR_LEN;  // 14: destination, source, type

enum class frame_verdict { ok, control, runt, wrong_type, too_long };

/// Writes the Ethernet header at `at` (eth_header bytes).
inline void write_eth_header(uint8_t* at, const rte_ether_addr& to, const rte_ether_addr& from,
                             uint16_t type = loom_ethertype) {
    auto* h = reinterpret_cast<rte_ether_hdr*>(at);
    rte_ether_addr_copy(&to, &h->dst_addr);
    rte_ether_addr_copy(&from, &h->src_addr);
    h->ether_type = rte_cpu_to_be_16(type);
}

/// Whether `m` is a loom frame with at most `max_payload` bytes after its header. A chained
/// mbuf is a frame larger than the pool's data room, which is sized past the MTU: too long.
inline frame_verdict classify(const rte_mbuf* m, size_t max_payload) {
    if (m->data_len < eth_header) {
        return m->nb_segs > 1 ? frame_verdict::too_long : frame_verdict::runt;
    }
    const auto* h = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
    if (h->ether_type != rte_cpu_to_be_16(loom_ethertype)) {
        return h->ether_type == rte_cpu_to_be_16(loom_control_ethertype)
                   ? frame_verdict::control
                   : frame_verdict::wrong_type;
    }
    if (m->nb_segs > 1 || m->pkt_len - eth_header > max_payload) {
        return frame_verdict::too_long;
    }
    return frame_verdict::ok;
}

}  // namespace loom::drivers::dpdk
