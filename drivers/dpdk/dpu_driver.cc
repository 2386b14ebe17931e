// SPDX-License-Identifier: Apache-2.0
// open("dpu"): loom's reliable tagged endpoint (drivers/reliable) over ONE DPDK port, the
// memif host port of this rank's own DPU (tools/loom-dpu), which routes every frame through
// the torus of DPUs to the destination rank's DPU and on to that rank.
//
// Why one link for every peer: the DPU is the node's only way out, so open_reliable() gets
// a single frame link and link_of_peer all 0 ("behind a router"). The protocol stays end to
// end between ranks (sequence numbers, acks, retransmission, checksums); the DPUs only
// route, rewriting the vc byte, which the checksum leaves out.
//
// Who connects where: loom-dpu is the memif server of its host ports and listens before
// any rank starts (loomrun --dpu waits for its sockets), so the rank is the client and never
// knocks at a socket nobody listens on. The socket is a file (LOOM_DPU_SOCKET) in a
// directory of the job's, and the pair carries the job's memif secret (LOOM_DPU_SECRET).
// Once up, the rank sends a hello control frame: the DPU holds what it has for this rank
// until then, since memif drops what a server sends before its client's first receive.
#include <memory>
#include <string>
#include <vector>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/dpdk/dpdk_params.hh"
#include "drivers/registry_internal.hh"
#include "drivers/reliable/reliable.hh"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_dpu(const endpoint_config& config) {
    std::string who    = "dpu: rank " + std::to_string(config.rank);
    std::string socket = dpdk::params::dpu_socket.get();
    if (socket.empty()) {
        return invalid_argument(who +
                                ": LOOM_DPU_SOCKET is unset (the memif socket of this rank's "
                                "DPU host port; loomrun --dpu sets it)");
    }
    std::string secret = dpdk::params::dpu_secret.get();
    if (secret.size() > 24) {
        return invalid_argument(who + ": LOOM_DPU_SECRET has more than 24 characters");
    }
    if (status st = dpdk::ensure_eal(); !st.is_ok()) {
        return st;
    }
    LOOM_ASSIGN(reliable::options opts, reliable::options_from_params());
    opts.name = "dpu";
    // The DPUs route by the world's ranks: a split child's ranks are numbered anew, so a
    // child connects its ranks directly over tcp instead (not routed by the DPUs yet). Not
    // over a dpdk memif mesh: children close while their peers close, and DPDK 22.11's memif
    // can fault in a tx burst while its interrupt thread tears down the peer's connection.
    opts.direct = "tcp";
    dpdk::port_config pc;
    pc.device = dpdk::memif_vdev(dpdk::unique_name("net_memif"), socket, false, 0, false) +
                (secret.empty() ? "" : ",secret=" + secret);
    pc.wait_link      = true;
    pc.retry_start    = true;
    pc.link_timeout_s = config.timeout_s;
    auto p            = dpdk::port::open(pc);
    if (!p) {
        return status(p.error()).prefix(who + ": host port of its DPU at " + socket + ": ");
    }
    auto link = std::make_unique<dpdk::eth_link>(std::move(*p));
    // "My receive buffers are posted": the DPU holds this rank's frames until it hears it.
    deadline until(config.timeout_s);
    while (!link->send_hello()) {
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT, who + ": could not send a hello to its DPU at " +
                                                socket + " within " +
                                                std::to_string(config.timeout_s) + " s");
        }
        link->flush();
    }
    std::vector<std::unique_ptr<common::frame_link>> links;
    links.push_back(std::move(link));
    std::vector<int> link_of_peer(size_t(config.size), 0);
    return reliable::open_reliable(config, std::move(links), std::move(link_of_peer), opts);
}

}  // namespace loom::drivers
