// SPDX-License-Identifier: Apache-2.0
// loom-dpu's ports (ports.hh).
#include "ports.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "routing/dateline.hh"

namespace loom::dpu {
namespace {

namespace dpdk = drivers::dpdk;

result<std::unique_ptr<dpdk::port>> open_memif(const options& o, const std::string& socket,
                                               bool server, const std::string& label) {
    dpdk::port_config pc;
    pc.device = dpdk::memif_vdev(dpdk::unique_name("net_memif"), socket, server, 0, false) +
                (o.secret.empty() ? "" : ",secret=" + o.secret);
    pc.wait_link   = false;
    pc.retry_start = !server;
    // A client connects once its server's ready file exists: it listens, so the link is
    // awaited, never stopped mid-hand-shake (which aborts a DPDK 22.11 memif server's
    // process: seen on a loaded host with --aggregate's extra ports starting beside).
    pc.restart_link_down = false;
    pc.link_timeout_s    = o.link_timeout_s;
    pc.rx_interrupts     = !o.busy_poll;  // the idle router sleeps on them (rx_wait.hh)
    auto p               = dpdk::port::open(pc);
    if (!p) {
        return status(p.error()).prefix("loom-dpu node " + std::to_string(o.node) + ": " + label +
                                        " at " + socket + ": ");
    }
    return p;
}

status write_ready(const options& o) {
    std::string path = ready_file(o.dir, o.node), tmp = path + ".tmp";
    int fd           = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    std::string text = std::to_string(getpid()) + "\n";
    bool ok          = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
    ok               = (fd >= 0 && close(fd) == 0) && ok;
    // Renamed into place: a reader never sees a half-written file.
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
        return system_error("loom-dpu node " + std::to_string(o.node) +
                            ": cannot write its ready file " + path);
    }
    return status::ok();
}

status wait_ready(const options& o, int node) {
    std::string path = ready_file(o.dir, node);
    deadline until(o.link_timeout_s);
    struct stat st {};
    while (stat(path.c_str(), &st) != 0) {
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT,
                          "loom-dpu node " + std::to_string(o.node) + ": node " +
                              std::to_string(node) + "'s DPU did not listen within " +
                              std::to_string(o.link_timeout_s) + " s (no " + path + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return status::ok();
}

}  // namespace

result<std::vector<dpu_port>> open_ports(const options& o, const topology::shape& s) {
    if (status st = dpdk::ensure_eal(); !st.is_ok()) {
        return st;
    }
    int nd = s.ndims();
    std::vector<dpu_port> ports(size_t(2 * nd + o.ranks_per_node));
    for (int d = 0; d < nd; ++d) {
        for (int step : {+1, -1}) {
            int nb = s.neighbour(o.node, d, step);
            if (nb < 0 || nb == o.node) {
                continue;
            }
            dpu_port& p = ports[size_t(routing::port_of(s, d, step))];
            if (p.neighbour >= 0) {
                continue;  // a size-2 dimension: + and − are the same link
            }
            p.dim       = d;
            p.step      = step;
            p.neighbour = nb;
            p.server    = o.node < nb;
            p.label     = "dim " + std::to_string(d) + (step > 0 ? " +" : " -") + " to node " +
                      std::to_string(nb);
        }
    }
    for (int i = 0; i < o.ranks_per_node; ++i) {
        dpu_port& p = ports[size_t(2 * nd + i)];
        p.host      = true;
        p.server    = true;
        p.rank      = o.node * o.ranks_per_node + i;
        p.label     = "host rank " + std::to_string(p.rank);
    }
    auto socket_of = [&](const dpu_port& p) {
        return p.host ? host_socket(o.dir, p.rank)
                      : link_socket(o.dir, std::min(o.node, p.neighbour),
                                    std::max(o.node, p.neighbour), p.dim);
    };
    for (dpu_port& p : ports) {
        if ((p.host || p.neighbour >= 0) && p.server) {
            LOOM_ASSIGN(p.dev, open_memif(o, socket_of(p), true, p.label));
        }
    }
    LOOM_CHECK(write_ready(o));
    for (dpu_port& p : ports) {
        if (p.neighbour >= 0 && !p.server) {
            LOOM_CHECK(wait_ready(o, p.neighbour));
            LOOM_ASSIGN(p.dev, open_memif(o, socket_of(p), false, p.label));
        }
    }
    for (dpu_port& p : ports) {
        if (p.dev != nullptr) {
            p.id = p.dev->id();
        }
    }
    return ports;
}

}  // namespace loom::dpu
