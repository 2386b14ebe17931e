// SPDX-License-Identifier: Apache-2.0
// The frame link's fast path over a DPDK port (dpdk_link.hh): bursts out and in, framing,
// drops counted by cause, and the link's state for alive().
#include "drivers/dpdk/dpdk_link.hh"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include <cstring>

#include "drivers/dpdk/dpdk_frame.hh"
#include "drivers/dpdk/dpdk_params.hh"

namespace loom::drivers::dpdk {
namespace {

// How often alive() reads the port's link state.
constexpr double check_every_s = 0.002;

}  // namespace

eth_link::eth_link(std::unique_ptr<port> p) : port_(std::move(p)) {
    memset(&peer_, 0xff, sizeof peer_);  // broadcast until the peer is heard from
    double hz  = double(rte_get_tsc_hz());
    check_tsc_ = uint64_t(check_every_s * hz);
    grace_tsc_ = uint64_t(params::down_grace.get() * hz);
}

eth_link::~eth_link() {
    flush();
    if (rx_held_ > 0) {
        rte_pktmbuf_free_bulk(rx_, rx_held_);
    }
}

bool eth_link::send(const void* head, size_t hlen, const void* body, size_t blen) {
    size_t len = hlen + blen;
    if (len > port_->mtu()) {
        ++stats_.drop_too_big;
        return false;
    }
    if (tx_count_ == burst_size) {
        flush();
    }
    rte_mbuf* m = rte_pktmbuf_alloc(port_->pool());
    if (m == nullptr) {
        ++stats_.drop_no_mbuf;
        return false;
    }
    // The pool's data room holds MTU + header (dpdk_port.cc): append cannot fail.
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(eth_header + len)));
    write_eth_header(p, peer_, port_->mac());
    memcpy(p + eth_header, head, hlen);
    if (blen > 0) {
        memcpy(p + eth_header + hlen, body, blen);
    }
    tx_bytes_[tx_count_] = uint32_t(len);
    tx_[tx_count_++]     = m;
    if (tx_count_ == burst_size) {
        flush();
    }
    return true;
}

bool eth_link::send_hello() {
    rte_mbuf* m = rte_pktmbuf_alloc(port_->pool());
    if (m == nullptr) {
        return false;
    }
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(eth_header)));
    write_eth_header(p, peer_, port_->mac(), loom_control_ethertype);
    if (rte_eth_tx_burst(port_->id(), 0, &m, 1) != 1) {
        rte_pktmbuf_free(m);
        return false;
    }
    return true;
}

void eth_link::flush() {
    if (tx_count_ == 0) {
        return;
    }
    uint16_t sent = rte_eth_tx_burst(port_->id(), 0, tx_, tx_count_);
    for (uint16_t i = 0; i < sent; ++i) {
        stats_.bytes_out += tx_bytes_[i];
    }
    stats_.frames_out += sent;
    if (sent < tx_count_) {
        // The ring is full: drop the rest, as a NIC would (the protocol above recovers).
        rte_pktmbuf_free_bulk(tx_ + sent, tx_count_ - sent);
        stats_.drop_tx_full += tx_count_ - sent;
    }
    tx_count_ = 0;
}

int eth_link::recv(common::frame_view* out, int max) {
    if (rx_held_ > 0) {
        rte_pktmbuf_free_bulk(rx_, rx_held_);
        rx_held_ = 0;
    }
    uint16_t want = uint16_t(max < 0 ? 0 : max > burst_size ? burst_size : max);
    uint16_t n    = want == 0 ? 0 : rte_eth_rx_burst(port_->id(), 0, rx_, want);
    rx_held_      = n;
    size_t limit  = port_->mtu();
    int got       = 0;
    // Headers of the next frames are fetched while this one is checked (l3fwd's pattern).
    for (uint16_t i = 0; i < n && i < 3; ++i) {
        rte_prefetch0(rte_pktmbuf_mtod(rx_[i], void*));
    }
    for (uint16_t i = 0; i < n; ++i) {
        if (i + 3 < n) {
            rte_prefetch0(rte_pktmbuf_mtod(rx_[i + 3], void*));
        }
        rte_mbuf* m           = rx_[i];
        frame_verdict verdict = classify(m, limit);
        if (verdict == frame_verdict::ok || verdict == frame_verdict::control) {
            // The peer's address, from the first frame it sends (until then: broadcast).
            const auto* h = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
            if (!peer_known_) {
                rte_ether_addr_copy(&h->src_addr, &peer_);
                peer_known_ = true;
            }
        }
        switch (verdict) {
            case frame_verdict::control:
                ++stats_.control_in;
                continue;
            case frame_verdict::runt:
                ++stats_.drop_runt;
                continue;
            case frame_verdict::wrong_type:
                ++stats_.drop_wrong_type;
                continue;
            case frame_verdict::too_long:
                ++stats_.drop_too_long;
                continue;
            case frame_verdict::ok:
                break;
        }
        const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
        out[got].data = p + eth_header;
        out[got].len  = m->pkt_len - eth_header;
        stats_.bytes_in += out[got].len;
        ++got;
    }
    stats_.frames_in += uint64_t(got);
    return got;
}

bool eth_link::alive() const {
    if (gone_) {
        return false;
    }
    uint64_t now = rte_get_tsc_cycles();
    if (now < next_check_) {
        return true;
    }
    next_check_ = now + check_tsc_;
    if (port_->link_up()) {
        down_since_ = 0;
    } else if (down_since_ == 0) {
        down_since_ = now;
    } else if (now - down_since_ > grace_tsc_) {
        gone_ = true;
    }
    return !gone_;
}

}  // namespace loom::drivers::dpdk
