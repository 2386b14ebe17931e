// SPDX-License-Identifier: Apache-2.0
// open("dpdk"): loom's reliable tagged endpoint (drivers/reliable) over DPDK ports, so the
// engine's collectives run over Ethernet frames through DPDK.
//
// Wiring: a full mesh of memif pairs, one per pair of ranks, as if every two nodes had a
// cable between them. The lower rank of a pair is the memif server, the higher the client,
// on an abstract Unix socket named after the job and the pair. Every rank first opens its
// server ports (never blocking) and says so in the store, then opens each client port once
// that port's server has said so, then waits for every link to come up: a rank waits only
// on lower ranks, which have opened their servers before waiting themselves, so no cycle
// can form. A client never knocks before its server listens: DPDK 22.11's memif client,
// refused again and again, can bring down the EAL's interrupt thread (docs/drivers/dpdk.md).
//
// Who may connect: an abstract socket is open to any process of the host, so each memif
// pair carries a secret (memif's own `secret=`, checked at its hand-shake) that rank 0
// draws and publishes in the job's store, which only the job's ranks can read. A stranger
// is refused by memif before it can take a pair's place, and the reliable protocol's job key
// drops any frame of another job that reaches a port anyway.
//
// The node's DPU as the one port every peer's frames go through (tools/loom-dpu) is the
// next wiring; until it exists the mesh is the only one.
#include <algorithm>
#include <string>
#include <vector>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/hash.hh"
#include "base/secret.hh"
#include "drivers/common/peer_set.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/registry_internal.hh"
#include "drivers/reliable/reliable.hh"

namespace loom::drivers {
namespace {

// memif allows a secret of at most 24 characters.
constexpr size_t memif_secret_chars = 24;

// The abstract socket of the pair (low, high) of `job`: short whatever the job's name (the
// socket's name has at most 107 bytes), and distinct per job and pair.
std::string pair_socket(const std::string& job, int low, int high) {
    char text[64];
    std::snprintf(text, sizeof text, "loom-dpdk-%016llx-%d-%d",
                  static_cast<unsigned long long>(fnv1a64(job)), low, high);
    return text;
}

// Rank 0 draws the memif secret and publishes it; the others read it.
result<std::string> memif_secret(const endpoint_config& config) {
    const std::string key = "dpdk/memif-secret";
    if (config.store == nullptr) {
        return invalid_argument("dpdk: rank " + std::to_string(config.rank) +
                                ": no store to agree on the ports' secret through");
    }
    if (config.rank == 0) {
        LOOM_ASSIGN(std::string secret, random_secret_hex());
        secret.resize(memif_secret_chars);
        if (status st = config.store->set(key, secret); !st.is_ok()) {
            return st.prefix("dpdk: rank 0: publishing the ports' secret: ");
        }
        return secret;
    }
    auto got = config.store->get(key, config.timeout_s);
    if (!got) {
        return status(got.error())
            .prefix("dpdk: rank " + std::to_string(config.rank) +
                    ": waiting for rank 0's port secret: ");
    }
    return *got;
}

// The store key a rank sets once its server ports listen.
std::string servers_key(int rank) {
    return "dpdk/listening/" + std::to_string(rank);
}

// The memif port of this rank toward `peer`.
result<std::unique_ptr<dpdk::port>> open_pair_port(const endpoint_config& config, int peer,
                                                   const std::string& secret, double timeout_s) {
    int low = std::min(config.rank, peer), high = std::max(config.rank, peer);
    bool server = config.rank == low;
    dpdk::port_config pc;
    pc.device = dpdk::memif_vdev(dpdk::unique_name("net_memif"), pair_socket(config.job, low, high),
                                 server, 0) +
                ",secret=" + secret;
    pc.wait_link   = false;
    pc.retry_start = !server;
    // A client opens only after its server said in the store that it listens, so a link
    // that is slow to come up (a loaded machine) is waited for, never restarted mid-handshake.
    pc.restart_link_down = false;
    pc.link_timeout_s    = timeout_s;
    pc.rx_interrupts     = true;  // an idle rank sleeps until a frame comes (reliable_wait.cc)
    auto p               = dpdk::port::open(pc);
    if (!p) {
        return status(p.error()).prefix("dpdk: rank " + std::to_string(config.rank) +
                                        ": port to rank " + std::to_string(peer) + ": ");
    }
    return p;
}

}  // namespace

result<std::unique_ptr<endpoint>> open_dpdk(const endpoint_config& config) {
    if (status st = dpdk::ensure_eal(); !st.is_ok()) {
        return st;
    }
    LOOM_ASSIGN(reliable::options opts, reliable::options_from_params());
    opts.name = "dpdk";
    LOOM_ASSIGN(std::vector<int> peers, common::peer_set(config, "dpdk"));
    std::vector<bool> is_peer(size_t(config.size), false);
    for (int r : peers) {
        is_peer[size_t(r)] = true;
    }
    std::vector<std::unique_ptr<dpdk::port>> ports(size_t(config.size));
    if (std::any_of(is_peer.begin(), is_peer.end(), [](bool b) { return b; })) {
        LOOM_ASSIGN(std::string secret, memif_secret(config));
        deadline until(config.timeout_s);
        // Servers first (toward higher ranks), then clients: see the file's comment.
        for (int r = config.rank + 1; r < config.size; ++r) {
            if (is_peer[size_t(r)]) {
                LOOM_ASSIGN(ports[size_t(r)], open_pair_port(config, r, secret,
                                                             std::max(until.remaining_s(), 0.001)));
            }
        }
        if (status st = config.store->set(servers_key(config.rank), "1"); !st.is_ok()) {
            return st.prefix("dpdk: rank " + std::to_string(config.rank) + ": ");
        }
        for (int r = 0; r < config.rank; ++r) {
            if (!is_peer[size_t(r)]) {
                continue;
            }
            auto listening =
                config.store->get(servers_key(r), std::max(until.remaining_s(), 0.001));
            if (!listening) {
                return status(listening.error())
                    .prefix("dpdk: rank " + std::to_string(config.rank) + ": waiting for rank " +
                            std::to_string(r) + "'s ports to listen: ");
            }
            LOOM_ASSIGN(ports[size_t(r)],
                        open_pair_port(config, r, secret, std::max(until.remaining_s(), 0.001)));
        }
        for (int r = 0; r < config.size; ++r) {
            if (ports[size_t(r)] != nullptr) {
                if (status st = ports[size_t(r)]->wait_link(std::max(until.remaining_s(), 0.001));
                    !st.is_ok()) {
                    return st.prefix("dpdk: rank " + std::to_string(config.rank) +
                                     ": link to rank " + std::to_string(r) + ": ");
                }
            }
        }
    }
    std::vector<std::unique_ptr<common::frame_link>> links;
    std::vector<int> link_of_peer(size_t(config.size), -1);
    for (int r = 0; r < config.size; ++r) {
        if (ports[size_t(r)] != nullptr) {
            link_of_peer[size_t(r)] = int(links.size());
            links.push_back(std::make_unique<dpdk::eth_link>(std::move(ports[size_t(r)])));
        }
    }
    return reliable::open_reliable(config, std::move(links), std::move(link_of_peer), opts);
}

}  // namespace loom::drivers
