// SPDX-License-Identifier: Apache-2.0
// Opening and closing a DPDK port (dpdk_port.hh): probe or find, pool, configure, MTU,
// queues, promiscuous mode, start, link. Run once per port, never on the fast path, so it
// may allocate, sleep and log.
#include "drivers/dpdk/dpdk_port.hh"

#include <net/if.h>
#include <rte_alarm.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "drivers/datagram.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_params.hh"

namespace loom::drivers::dpdk {
namespace {

constexpr size_t eth_overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
// The pool's per-lcore cache: rx refills and tx frees mostly stay in it.
constexpr unsigned pool_cache = burst_size * 2;

std::string error_text(int rc) {
    return std::string(rte_strerror(rc < 0 ? -rc : rc));
}

/// Silences a PMD's own log while open() retries what is expected to fail for a while (a
/// memif client's connect before its server listens logs an error each try).
class quiet_log {
  public:
    explicit quiet_log(const char* type) : type_(rte_log_register(type)) {
        if (type_ >= 0) {
            level_ = rte_log_get_level(type_);
            (void)rte_log_set_level(type_, RTE_LOG_EMERG);
        }
    }
    ~quiet_log() {
        if (type_ >= 0 && level_ >= 0) {
            (void)rte_log_set_level(type_, uint32_t(level_));
        }
    }

  private:
    int type_  = -1;
    int level_ = -1;
};

/// A kernel interface's MTU, read without changing it.
result<size_t> kernel_mtu(const std::string& iface) {
    ifreq req{};
    if (iface.size() >= sizeof req.ifr_name) {
        return invalid_argument("dpdk: interface name '" + iface + "' is too long");
    }
    memcpy(req.ifr_name, iface.c_str(), iface.size());
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::ioctl(fd, SIOCGIFMTU, &req) != 0) {
        int e = errno;
        if (fd >= 0) {
            ::close(fd);
        }
        return system_error("dpdk: the MTU of interface '" + iface + "': " + std::strerror(e));
    }
    ::close(fd);
    return size_t(req.ifr_mtu);
}

}  // namespace

result<std::unique_ptr<port>> port::open(const port_config& config) {
    if (status s = ensure_eal(); !s) {
        return s;
    }
    std::unique_ptr<port> p(new port);
    if (status s = p->setup(config); !s) {
        return s;
    }
    return p;
}

status port::setup(const port_config& config) {
    const std::string& device = config.device;
    name_                     = device.substr(0, device.find(','));
    if (rte_eth_dev_get_port_by_name(name_.c_str(), &id_) != 0) {
        int rc = rte_dev_probe(device.c_str());
        if (rc < 0) {
            return system_error("dpdk: probing '" + device + "' failed: " + error_text(rc));
        }
        probed_ = true;
        if (rte_eth_dev_get_port_by_name(name_.c_str(), &id_) != 0) {
            return system_error("dpdk: '" + device + "' was probed but gave no port named '" +
                                name_ + "'");
        }
    }
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(id_, &info); rc != 0) {
        return system_error("dpdk: " + name_ + ": no device info: " + error_text(rc));
    }
    driver_ = info.driver_name ? info.driver_name : "?";

    size_t want      = size_t(std::clamp<int64_t>(params::mtu.get(), RTE_ETHER_MIN_MTU, 65535));
    want             = std::min<size_t>(want, info.max_mtu);
    uint16_t rx_ring = uint16_t(std::clamp<int64_t>(params::ring.get(), 64, 4096));
    uint16_t tx_ring = rx_ring;

    rte_eth_conf conf{};
    uint64_t tx_offloads = 0;
    // Every mbuf comes from this port's one pool with a reference count of 1: the PMD may
    // return them to the pool in bulk.
    if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) {
        tx_offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
    }
    conf.txmode.offloads = tx_offloads;
    conf.intr_conf.rxq   = config.rx_interrupts ? 1 : 0;
    int configured       = rte_eth_dev_configure(id_, 1, 1, &conf);
    if (configured != 0 && config.rx_interrupts) {
        // A driver that refuses rx interrupts still forwards: the poller then naps instead.
        rx_intr_why_       = "the driver refused rx interrupts: " + error_text(configured);
        conf.intr_conf.rxq = 0;
        configured         = rte_eth_dev_configure(id_, 1, 1, &conf);
    }
    if (configured != 0) {
        return system_error("dpdk: " + describe() +
                            ": configure failed: " + error_text(configured));
    }
    configured_ = true;
    if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(id_, &rx_ring, &tx_ring); rc != 0) {
        return system_error("dpdk: " + describe() + ": ring sizes refused: " + error_text(rc));
    }

    const char* mtu_how = "set";
    if (!config.kernel_iface.empty()) {
        LOOM_ASSIGN(mtu_, kernel_mtu(config.kernel_iface));
        mtu_how = "the interface's, kept";
    } else if (int rc = rte_eth_dev_set_mtu(id_, uint16_t(want)); rc == 0) {
        mtu_ = want;
    } else if (rc == -ENOTSUP) {
        // The driver has no MTU to set (memif): its frames span its buffers, as large as the
        // pool's data room, which is sized for `want`.
        mtu_    = want;
        mtu_how = "not limited by the driver";
    } else {
        mtu_how = "refused, the port's";
    }
    if (mtu_ == 0) {
        uint16_t now = 0;
        if (int rc = rte_eth_dev_get_mtu(id_, &now); rc != 0) {
            return system_error("dpdk: " + describe() + ": no MTU: " + error_text(rc));
        }
        mtu_ = now;
    }

    // The pool: both rings full, a burst being received and one being sent, and the cache.
    unsigned mbufs = unsigned(rx_ring) + tx_ring + 2 * burst_size + pool_cache + 1;
    size_t room    = RTE_PKTMBUF_HEADROOM +
                  std::max({mtu_ + eth_overhead, want + eth_overhead,
                            size_t(datagram_max_frame) + eth_overhead, config.min_data_room});
    room                  = (room + 63) / 64 * 64;
    std::string pool_name = unique_name("loom_pool");
    pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, pool_cache, 0, uint16_t(room),
                                    int(rte_socket_id()));
    if (pool_ == nullptr) {
        return system_error("dpdk: " + describe() + ": mbuf pool of " + std::to_string(mbufs) +
                            " x " + std::to_string(room) + " bytes: " + rte_strerror(rte_errno) +
                            " (LOOM_DPDK_RING, EAL -m)");
    }
    int socket = rte_eth_dev_socket_id(id_);
    if (int rc = rte_eth_rx_queue_setup(id_, 0, rx_ring, unsigned(socket), nullptr, pool_);
        rc != 0) {
        return system_error("dpdk: " + describe() + ": rx queue: " + error_text(rc));
    }
    rte_eth_txconf txconf = info.default_txconf;
    txconf.offloads       = tx_offloads;
    if (int rc = rte_eth_tx_queue_setup(id_, 0, tx_ring, unsigned(socket), &txconf); rc != 0) {
        return system_error("dpdk: " + describe() + ": tx queue: " + error_text(rc));
    }
    // Promiscuous: a peer's frames reach us before we know its address and it ours (it
    // sends to broadcast until it has heard from us); other traffic is dropped by EtherType.
    bool promiscuous = rte_eth_promiscuous_enable(id_) == 0;

    deadline until(config.link_timeout_s);
    // A memif client whose server is not listening yet fails to start; one that connects
    // while its server interface is still being set up is refused once and does not try
    // again by itself. Both are retried, stopping and starting, with a growing wait (the
    // second only where restart_link_down allows it).
    double settle = 0.5;
    for (;;) {
        int rc = 0;
        {
            std::optional<quiet_log> quiet;
            if (config.retry_start) {
                quiet.emplace("pmd.net.memif");
            }
            rc = rte_eth_dev_start(id_);
        }
        if (rc == 0) {
            started_      = true;
            double window = config.restart_link_down ? std::min(settle, until.remaining_s())
                                                     : until.remaining_s();
            if (!config.retry_start || wait_link(std::max(window, 0.0)).is_ok()) {
                break;
            }
            (void)rte_eth_dev_stop(id_);
            started_ = false;
            settle   = std::min(settle * 2, 2.0);
        }
        if (!config.retry_start || until.expired()) {
            std::string why = rc != 0 ? "start failed: " + error_text(rc) : "link not up";
            return status(config.retry_start ? LOOM_ERR_TIMEOUT : LOOM_ERR_SYSTEM,
                          "dpdk: " + describe() + ": " + why +
                              (config.retry_start
                                   ? " after " + std::to_string(config.link_timeout_s) +
                                         " s (is its peer listening, with a free interface id?)"
                                   : ""));
        }
        ::usleep(20000);
    }
    if (conf.intr_conf.rxq == 1) {
        find_rx_interrupt();
    }
    (void)rte_eth_macaddr_get(id_, &mac_);
    if (config.wait_link) {
        LOOM_CHECK(wait_link(until.remaining_s() > 0 ? until.remaining_s() : 0));
        post_rx_buffers();
    }

    char mac[RTE_ETHER_ADDR_FMT_SIZE];
    rte_ether_format_addr(mac, sizeof mac, &mac_);
    LOOM_LOG_INFO(
        log::subsystem::net,
        "dpdk: port %u %s driver %s mac %s: 1 rx + 1 tx queue of %u/%u descriptors, "
        "MTU %zu (%s), pool %u mbufs of %zu bytes, offloads tx 0x%llx%s, rx none, "
        "promiscuous %s, rx interrupt %s",
        unsigned(id_), name_.c_str(), driver_.c_str(), mac, unsigned(rx_ring), unsigned(tx_ring),
        mtu_, mtu_how, mbufs, room, static_cast<unsigned long long>(tx_offloads),
        tx_offloads & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE ? " (mbuf fast free)" : "",
        promiscuous ? "on" : "not supported", rx_intr_fd_ >= 0 ? "yes" : rx_intr_why_.c_str());
    return status::ok();
}

namespace {

struct stop_request {
    uint16_t id;
    bool started, configured;
    std::atomic<bool> done{false};
};

// Runs on the EAL's interrupt thread (an alarm), where memif also handles its peer's
// disconnect: stopping a port there cannot race that handler. Stopped on the caller's
// thread, a memif port whose peer disconnected at the same moment had its regions freed
// twice by DPDK 22.11 (a crash in the interrupt thread when 8 ranks closed together).
void stop_on_interrupt_thread(void* arg) {
    auto* r = static_cast<stop_request*>(arg);
    if (r->started) {
        (void)rte_eth_dev_stop(r->id);
    }
    if (r->configured || r->started) {
        (void)rte_eth_dev_close(r->id);
    }
    r->done.store(true, std::memory_order_release);  // A: pairs with the acquire below
}

}  // namespace

port::~port() {
    if (started_ || configured_) {
        stop_request request{id_, started_, configured_};
        if (rte_eal_alarm_set(1, stop_on_interrupt_thread, &request) == 0) {
            deadline until(10);
            while (!request.done.load(std::memory_order_acquire) && !until.expired()) {  // A
                timespec ts{0, 100000};
                ::nanosleep(&ts, nullptr);
            }
            if (!request.done.load(std::memory_order_acquire)) {
                // The interrupt thread is stuck: the request must outlive this frame.
                (void)rte_eal_alarm_cancel(stop_on_interrupt_thread, &request);
            }
        } else {
            stop_on_interrupt_thread(&request);
        }
    }
    if (probed_) {
        (void)rte_eal_hotplug_remove("vdev", name_.c_str());
    }
    if (pool_ != nullptr) {
        rte_mempool_free(pool_);
    }
}

// The queue's descriptor, and whether it needs arming: DPDK's ethdev offers one only where
// the driver filled the port's interrupt vector (VFIO NICs, net_tap); memif (22.11) does
// not, whatever intr_conf says.
void port::find_rx_interrupt() {
    int fd = -1;
    {
        quiet_log quiet("lib.ethdev");  // its "Rx Intr handle unset" is an answer here
        fd = rte_eth_dev_rx_intr_ctl_q_get_fd(id_, 0);
    }
    if (fd < 0) {
        rx_intr_why_ = "the driver has none";
        return;
    }
    int rc = rte_eth_dev_rx_intr_enable(id_, 0);
    if (rc == 0) {
        (void)rte_eth_dev_rx_intr_disable(id_, 0);
        rx_intr_switch_ = true;
    } else if (rc != -ENOTSUP) {
        rx_intr_why_ = "arming it failed: " + error_text(rc);
        return;
    }
    rx_intr_fd_ = fd;
    rx_intr_why_.clear();
}

void port::arm_rx_interrupt() {
    if (rx_intr_switch_) {
        (void)rte_eth_dev_rx_intr_enable(id_, 0);
    }
}

void port::disarm_rx_interrupt() {
    if (rx_intr_switch_) {
        (void)rte_eth_dev_rx_intr_disable(id_, 0);
    }
}

void port::post_rx_buffers() {
    rte_mbuf* none[1];
    (void)rte_eth_rx_burst(id_, 0, none, 0);
}

bool port::link_up() const {
    rte_eth_link link{};
    return rte_eth_link_get_nowait(id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

status port::wait_link(double timeout_s) const {
    deadline until(timeout_s);
    while (!link_up()) {
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT, "dpdk: " + describe() + ": link not up after " +
                                                std::to_string(timeout_s) +
                                                " s (LOOM_DPDK_LINK_TIMEOUT; memif: is the "
                                                "other side there, with a free interface id?)");
        }
        ::usleep(1000);
    }
    return status::ok();
}

std::string memif_vdev(const std::string& name, const std::string& socket, bool server, int64_t id,
                       bool abstract) {
    int64_t ring = std::clamp<int64_t>(params::ring.get(), 64, 4096);
    int log2     = 0;
    while ((int64_t(1) << (log2 + 1)) <= ring) {
        ++log2;
    }
    int64_t mtu   = std::clamp<int64_t>(params::mtu.get(), RTE_ETHER_MIN_MTU, 65535 - 1024);
    int64_t bsize = (mtu + int64_t(RTE_ETHER_HDR_LEN) + 1023) / 1024 * 1024;
    return name + ",role=" + (server ? "server" : "client") + ",id=" + std::to_string(id) +
           (abstract ? ",socket=/" + socket + ",socket-abstract=yes"
                     : ",socket=" + socket + ",socket-abstract=no") +
           ",rsize=" + std::to_string(log2) + ",bsize=" + std::to_string(bsize);
}

std::string port::describe() const {
    return "dpdk port " + std::to_string(id_) + " (" + name_ + (driver_.empty() ? "" : ", ") +
           driver_ + ")";
}

}  // namespace loom::drivers::dpdk
