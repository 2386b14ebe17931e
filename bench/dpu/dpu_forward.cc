// SPDX-License-Identifier: Apache-2.0
// loom-dpu-forward: the forwarding rate of one loom-dpu core between two memif host ports,
// beside a minimal io-forward loop on the same ports as the baseline (what dpdk-testpmd's
// io mode does: rx_burst, then tx_burst of the same mbufs; Debian 12 ships no testpmd).
// bench/dpu/run.sh starts the forwarder under test and this program's generator, and
// prints the table.
//
//   loom-dpu-forward iofwd DIR                 the baseline: memif servers DIR/h0.sock and
//                                              DIR/h1.sock (loom-dpu's host ports of ranks
//                                              0 and 1), forwarding both ways until SIGTERM;
//                                              writes DIR/node-0.ready when listening
//   loom-dpu-forward gen DIR BYTES SECONDS     the generator: memif clients of both ports;
//                                              reliable-protocol frames of BYTES (Ethernet
//                                              header included) from rank 0 to rank 1 into
//                                              h0 as fast as h0 takes them, counted as they
//                                              come out of h1 over SECONDS after a warm-up
//
// The frames carry a valid reliable header (magic, version, kind, body length, source and
// destination) so loom-dpu routes them; their body is whatever the mbuf held (nothing here
// checks it, and neither forwarder reads it). The smallest such frame is 14 + 88 = 102
// bytes: loom-dpu forwards nothing shorter, so the "small frame" rate is at 102 B, not 64.
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "base/byte_order.hh"
#include "base/clock.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_frame.hh"
#include "drivers/dpdk/dpdk_port.hh"
#include "drivers/reliable/reliable_wire.hh"

namespace {

namespace dpdk = loom::drivers::dpdk;
namespace wire = loom::drivers::reliable;

volatile sig_atomic_t stop = 0;

void on_stop(int) {
    stop = 1;
}

std::unique_ptr<dpdk::port> open_port(const std::string& socket, bool server) {
    dpdk::port_config pc;
    pc.device      = dpdk::memif_vdev(dpdk::unique_name("net_memif"), socket, server, 0, false);
    pc.wait_link   = !server;
    pc.retry_start = !server;
    pc.restart_link_down = false;  // the forwarder listens before the generator starts
    pc.link_timeout_s    = 20;
    auto p               = dpdk::port::open(pc);
    if (!p) {
        std::fprintf(stderr, "loom-dpu-forward: %s\n", p.error().to_string().c_str());
        std::exit(1);
    }
    return std::move(*p);
}

// The baseline: every frame from one port straight to the other, what the tx ring refuses
// freed (as loom-dpu would hold it instead: on a full ring the two differ, which the
// generator's pacing by h0's own ring keeps rare).
int iofwd(const std::string& dir) {
    auto a = open_port(dir + "/h0.sock", true), b = open_port(dir + "/h1.sock", true);
    std::ofstream(dir + "/node-0.ready") << "iofwd\n";
    dpdk::port* ports[2] = {a.get(), b.get()};
    rte_mbuf* burst[32];
    uint64_t moved = 0, freed = 0;
    while (stop == 0) {
        for (int i = 0; i < 2; ++i) {
            uint16_t n = rte_eth_rx_burst(ports[i]->id(), 0, burst, 32);
            if (n == 0) {
                continue;
            }
            uint16_t sent = rte_eth_tx_burst(ports[1 - i]->id(), 0, burst, n);
            moved += sent;
            if (sent < n) {
                rte_pktmbuf_free_bulk(burst + sent, n - sent);
                freed += n - sent;
            }
        }
    }
    std::printf("iofwd moved=%llu freed=%llu\n", static_cast<unsigned long long>(moved),
                static_cast<unsigned long long>(freed));
    return 0;
}

void write_frame(rte_mbuf* m, size_t bytes, const rte_ether_addr& src) {
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(bytes)));
    rte_ether_addr all;
    memset(&all, 0xff, sizeof all);
    dpdk::write_eth_header(p, all, src);
    uint8_t* h = p + dpdk::eth_header;
    memset(h, 0, wire::header_bytes);
    loom::be::put16(h, wire::wire_magic);
    h[2] = wire::wire_version;
    h[3] = 1;  // a data frame's kind; loom-dpu checks the range only
    loom::be::put16(h + 6, uint16_t(bytes - dpdk::eth_header - wire::header_bytes));
    loom::be::put32(h + 8, 0);   // from rank 0 (host port h0)
    loom::be::put32(h + 12, 1);  // to rank 1 (host port h1)
}

int gen(const std::string& dir, size_t bytes, double seconds) {
    auto in = open_port(dir + "/h0.sock", false), out = open_port(dir + "/h1.sock", false);
    size_t largest = dpdk::eth_header + in->mtu();
    if (bytes < dpdk::eth_header + wire::header_bytes || bytes > largest) {
        std::fprintf(stderr, "loom-dpu-forward: frames of %zu..%zu bytes\n",
                     dpdk::eth_header + wire::header_bytes, largest);
        return 2;
    }
    // Hellos both ways: loom-dpu sends to a port only once it heard it.
    for (dpdk::port* p : {in.get(), out.get()}) {
        rte_mbuf* m = rte_pktmbuf_alloc(p->pool());
        auto* at    = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(dpdk::eth_header)));
        rte_ether_addr all;
        memset(&all, 0xff, sizeof all);
        dpdk::write_eth_header(at, all, p->mac(), dpdk::loom_control_ethertype);
        if (rte_eth_tx_burst(p->id(), 0, &m, 1) != 1) {
            rte_pktmbuf_free(m);
        }
        p->post_rx_buffers();
    }
    double hz       = double(rte_get_tsc_hz());
    uint64_t start  = rte_get_tsc_cycles();
    uint64_t warm   = start + uint64_t(0.5 * hz);
    uint64_t finish = warm + uint64_t(seconds * hz);
    uint64_t sent = 0, got = 0, got_bytes = 0;
    rte_mbuf* burst[32];
    for (uint64_t now = start; now < finish; now = rte_get_tsc_cycles()) {
        uint16_t n = 0;
        for (; n < 32; ++n) {
            burst[n] = rte_pktmbuf_alloc(in->pool());
            if (burst[n] == nullptr) {
                break;
            }
            write_frame(burst[n], bytes, in->mac());
        }
        uint16_t took = rte_eth_tx_burst(in->id(), 0, burst, n);
        if (took < n) {
            rte_pktmbuf_free_bulk(burst + took, n - took);
        }
        sent += took;
        uint16_t r = rte_eth_rx_burst(out->id(), 0, burst, 32);
        if (now >= warm) {
            got += r;
            for (uint16_t i = 0; i < r; ++i) {
                got_bytes += burst[i]->pkt_len;
            }
        }
        rte_pktmbuf_free_bulk(burst, r);
    }
    std::printf("frame_bytes=%zu seconds=%.2f sent=%llu received=%llu mpps=%.3f gbps=%.3f\n", bytes,
                seconds, static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(got), double(got) / seconds / 1e6,
                double(got_bytes) * 8 / seconds / 1e9);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);
    std::string mode = argc > 2 ? argv[1] : "";
    if (mode == "iofwd" && argc == 3) {
        return iofwd(argv[2]);
    }
    if (mode == "gen" && argc == 5) {
        return gen(argv[2], size_t(std::strtoull(argv[3], nullptr, 10)), std::atof(argv[4]));
    }
    std::fprintf(stderr, "usage: loom-dpu-forward iofwd DIR | gen DIR BYTES SECONDS\n");
    return 2;
}
