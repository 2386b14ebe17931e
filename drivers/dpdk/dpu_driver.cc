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
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/dpdk/dpdk_params.hh"
#include "drivers/registry_internal.hh"
#include "drivers/reliable/reliable.hh"

namespace loom::drivers {
namespace {

// How long a closing rank keeps its port open after its last frames: memif has no tx
// completion, and frames still in the ring when the client disconnects are lost with it
// (the last acks and the goodbye, which peers then wait for until their silence timeout).
constexpr auto close_drain = std::chrono::milliseconds(100);

// The rank's link to its DPU: eth_link, with the drain above before the port closes.
class dpu_link final : public common::frame_link {
  public:
    explicit dpu_link(std::unique_ptr<dpdk::eth_link> inner) : inner_(std::move(inner)) {}
    ~dpu_link() override {
        inner_->flush();
        std::this_thread::sleep_for(close_drain);  // once per endpoint, at close
    }
    size_t mtu() const override { return inner_->mtu(); }
    bool send(const void* head, size_t hlen, const void* body, size_t blen) override {
        return inner_->send(head, hlen, body, blen);
    }
    void flush() override { inner_->flush(); }
    int recv(common::frame_view* out, int max) override { return inner_->recv(out, max); }
    bool alive() const override { return inner_->alive(); }
    std::string describe() const override { return inner_->describe(); }
    int rx_event_fd() const override { return inner_->rx_event_fd(); }
    void arm_rx_event() override { inner_->arm_rx_event(); }
    void disarm_rx_event() override { inner_->disarm_rx_event(); }

  private:
    std::unique_ptr<dpdk::eth_link> inner_;
};

}  // namespace

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
    pc.rx_interrupts  = true;  // an idle rank sleeps until its DPU sends (reliable_wait.cc)
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
    links.push_back(std::make_unique<dpu_link>(std::move(link)));
    std::vector<int> link_of_peer(size_t(config.size), 0);
    return reliable::open_reliable(config, std::move(links), std::move(link_of_peer), opts);
}

}  // namespace loom::drivers
