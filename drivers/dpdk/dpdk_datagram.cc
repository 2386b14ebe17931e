// SPDX-License-Identifier: Apache-2.0
// The datagram endpoint "dpdk:" (drivers/datagram.hh) over a DPDK frame link: one
// in-network frame per Ethernet frame. Two kinds of port:
//   dpdk:memif:NAME[:ID]  a memif pair over the abstract Unix socket "/loom-memif-NAME"
//                         (dpdk_port.cc: memif_vdev).
//                         memif pairs one server interface with one client, told apart by
//                         an interface id, so the listener opens LOOM_DPDK_MEMIF_IDS server
//                         ports (ids 0..K-1) on the one socket and accept() hands out each
//                         whose client has connected, once it said hello; a client names
//                         its id, or is given a free one by the listener
//                         (dpdk_memif_ids.hh), so all ranks of a job connect to the one
//                         address a node announces. Ids are the
//                         transport's own way to share a socket, and a fixed K keeps every pool
//                         allocated at listen(), none later.
//   dpdk:af_packet:IFACE  a kernel interface through an AF_PACKET socket (veth, a NIC
//                         without a DPDK driver): both sides open a port on their interface;
//                         the listener's accept() hands out its one port once, as a wire
//                         has no per-peer connection. Frames go to broadcast until the peer
//                         is heard. The interface keeps its MTU (`ip link ... mtu 9000`).
// send() hands each frame to the port at once (the datagram interface has no flush), so
// its counts are exact: sent when the tx ring took it, send_dropped when not.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/datagram_internal.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/dpdk/dpdk_memif_ids.hh"
#include "drivers/dpdk/dpdk_params.hh"

namespace loom::drivers::dpdk {
namespace {

class endpoint final : public datagram_endpoint {
  public:
    endpoint(std::unique_ptr<port> p, std::string address)
        : link_(std::move(p)), address_(std::move(address)) {}

    void send(const uint8_t* frame, size_t len) override {
        if (len > datagram_max_frame || !link_.alive()) {
            ++stats_.send_dropped;
            return;
        }
        uint64_t lost = link_.stats().drop_tx_full;
        if (!link_.send(frame, len, nullptr, 0)) {
            ++stats_.send_dropped;
            return;
        }
        link_.flush();
        if (link_.stats().drop_tx_full != lost) {
            ++stats_.send_dropped;
            return;
        }
        ++stats_.sent;
        stats_.bytes_sent += len;
    }

    bool recv(const uint8_t** frame, size_t* len) override {
        while (next_ == count_) {
            if (!receive_burst()) {
                return false;
            }
        }
        const auto& v = views_[next_++];
        if (v.len > datagram_max_frame) {
            // Within the port's MTU but over what a datagram endpoint carries.
            ++oversize_;
            ++stats_.bad_frames;
            return recv(frame, len);
        }
        *frame = v.data;
        *len   = v.len;
        ++stats_.received;
        stats_.bytes_received += v.len;
        return true;
    }

    bool alive() const override { return link_.alive(); }

    /// Before accept() hands it out: true once the peer said hello (or sent anything), so
    /// its receive buffers are posted. Frames that came are kept for recv().
    bool peer_ready() {
        if (next_ == count_) {
            (void)receive_burst();
        }
        return link_.peer_ready();
    }
    bool say_hello() { return link_.send_hello(); }
    std::string describe() const override { return address_ + " (" + link_.describe() + ")"; }
    const datagram_stats& stats() const override { return stats_; }

  private:
    /// One burst from the link into views_; false when none came.
    bool receive_burst() {
        next_             = 0;
        count_            = link_.recv(views_, burst_size);
        const auto& s     = link_.stats();
        stats_.bad_frames = s.drop_too_long + s.drop_runt + s.drop_wrong_type + oversize_;
        return count_ > 0;
    }

    eth_link link_;
    std::string address_;
    datagram_stats stats_;
    common::frame_view views_[burst_size];
    int next_ = 0, count_ = 0;
    uint64_t oversize_ = 0;
};

/// NAME may go into a vdev's arguments: no separators (',' '=' ':') or spaces.
status check_name(std::string_view what, std::string_view name, std::string_view address) {
    bool ok =
        !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        });
    if (!ok) {
        return invalid_argument("dpdk datagram address '" + std::string(address) +
                                "': " + std::string(what) + " '" + std::string(name) +
                                "' must be 1-64 of A-Z a-z 0-9 - _ .");
    }
    return status::ok();
}

std::string memif_device(std::string_view name, bool server, int64_t id) {
    return memif_vdev(unique_name("net_memif_loom"), "loom-memif-" + std::string(name), server, id);
}

// The kernel ring's frames: a 9000-byte MTU frame and its tpacket header; af_packet copies
// a whole ring frame into one mbuf, so the port's data room holds one.
constexpr size_t af_packet_frame = 10240;

std::string af_packet_device(std::string_view iface) {
    return unique_name("net_af_packet_loom") + ",iface=" + std::string(iface) +
           ",qpairs=1,framesz=" + std::to_string(af_packet_frame) +
           ",blocksz=" + std::to_string(2 * af_packet_frame) + ",framecnt=512";
}

class memif_listener final : public datagram_listener {
  public:
    memif_listener(std::string name, std::vector<std::unique_ptr<port>> ports, int ids_fd)
        : name_(std::move(name)),
          ports_(std::move(ports)),
          waiting_(ports_.size()),
          available_(ports_.size(), true),
          ids_fd_(ids_fd) {}
    ~memif_listener() override { ::close(ids_fd_); }
    memif_listener(const memif_listener&)            = delete;
    memif_listener& operator=(const memif_listener&) = delete;

    // A client's link comes up before it has posted its receive buffers (memif gives a
    // server nothing to write into until then): its endpoint is handed out once it said
    // hello, so the node's first frame (an in-network challenge) is not dropped.
    std::unique_ptr<datagram_endpoint> accept() override {
        memif_ids::serve(ids_fd_, available_);
        for (size_t id = 0; id < ports_.size(); ++id) {
            if (ports_[id] && ports_[id]->link_up()) {
                available_[id] = false;  // taken by a client that named it
                waiting_[id]   = std::make_unique<endpoint>(
                    std::move(ports_[id]), "dpdk:memif:" + name_ + ":" + std::to_string(id));
            }
            if (waiting_[id] && waiting_[id]->peer_ready()) {
                return std::move(waiting_[id]);
            }
        }
        return nullptr;
    }
    std::string address() const override { return "dpdk:memif:" + name_; }

  private:
    std::string name_;
    std::vector<std::unique_ptr<port>> ports_;        // not yet connected
    std::vector<std::unique_ptr<endpoint>> waiting_;  // connected, no hello yet
    std::vector<bool> available_;                     // ids not yet handed out
    int ids_fd_;                                      // memif_ids' socket
};

class af_packet_listener final : public datagram_listener {
  public:
    af_packet_listener(std::string iface, std::unique_ptr<port> p)
        : iface_(std::move(iface)), port_(std::move(p)) {}
    std::unique_ptr<datagram_endpoint> accept() override {
        if (!port_ || !port_->link_up()) {
            return nullptr;
        }
        return std::make_unique<endpoint>(std::move(port_), address());
    }
    std::string address() const override { return "dpdk:af_packet:" + iface_; }

  private:
    std::string iface_;
    std::unique_ptr<port> port_;
};

struct parsed {
    std::string kind, name;
    int64_t id = -1;  // memif: -1 when the address names none (the listener gives one)
};

result<parsed> parse(std::string_view rest, bool connecting) {
    std::string address = "dpdk:" + std::string(rest);
    parsed p;
    size_t colon = rest.find(':');
    p.kind       = std::string(rest.substr(0, colon));
    if (colon == std::string_view::npos || (p.kind != "memif" && p.kind != "af_packet")) {
        return invalid_argument("dpdk datagram address '" + address +
                                "': expected dpdk:memif:NAME[:ID] or dpdk:af_packet:IFACE");
    }
    std::string_view tail = rest.substr(colon + 1);
    if (p.kind == "memif") {
        size_t c = tail.find(':');
        if (c != std::string_view::npos) {
            std::string_view id = tail.substr(c + 1);
            tail                = tail.substr(0, c);
            if (!connecting || id.empty() || id.size() > 2 ||
                !std::all_of(id.begin(), id.end(),
                             [](char ch) { return ch >= '0' && ch <= '9'; })) {
                return invalid_argument("dpdk datagram address '" + address +
                                        "': an interface id is a number, given when connecting");
            }
            p.id = std::stoll(std::string(id));
        }
    }
    p.name = std::string(tail);
    LOOM_CHECK(check_name(p.kind == "memif" ? "NAME" : "IFACE", p.name, address));
    return p;
}

/// A memif client's endpoint, once its hello is out (its listener hands out the server's
/// side on it: accept()).
result<std::unique_ptr<datagram_endpoint>> with_hello(std::unique_ptr<endpoint> e) {
    if (!e->say_hello()) {
        return system_error("dpdk: " + e->describe() + ": the hello did not go out");
    }
    return std::unique_ptr<datagram_endpoint>(std::move(e));
}

}  // namespace

result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s) {
    LOOM_ASSIGN(parsed a, parse(rest, true));
    std::string rest_with_id(rest);
    port_config config;
    config.link_timeout_s = timeout_s;
    deadline until(timeout_s);
    bool asked = false;  // the listener handed out the id: it listens
    if (a.kind == "memif" && a.id < 0) {
        asked   = true;
        auto id = memif_ids::ask(a.name, timeout_s);
        if (!id) {
            return id.error();
        }
        a.id                  = *id;
        config.link_timeout_s = std::max(until.remaining_s(), 0.01);
        rest_with_id          = "memif:" + a.name + ":" + std::to_string(a.id);
    }
    if (a.kind == "memif") {
        config.device      = memif_device(a.name, false, a.id);
        config.retry_start = true;
        // When the listener handed out the id it listens: the link is awaited, never stopped
        // mid-hand-shake, which aborts a DPDK 22.11 memif server's process (seen with 7
        // loom-dpu leaves joining their root on a loaded host). A named id may be tried
        // before its listener is set up, which refuses once: restarted then.
        config.restart_link_down = !asked;
    } else {
        config.device        = af_packet_device(a.name);
        config.kernel_iface  = a.name;
        config.min_data_room = af_packet_frame;
    }
    auto p = port::open(config);
    if (!p) {
        status s = p.error();
        return s.prefix("connect dpdk:" + rest_with_id + ": ");
    }
    auto e = std::make_unique<endpoint>(std::move(*p), "dpdk:" + rest_with_id);
    if (a.kind == "memif") {
        return with_hello(std::move(e));
    }
    return std::unique_ptr<datagram_endpoint>(std::move(e));
}

result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view rest) {
    LOOM_ASSIGN(parsed a, parse(rest, false));
    port_config config;
    config.link_timeout_s = params::link_timeout.get();
    if (a.kind == "af_packet") {
        config.device        = af_packet_device(a.name);
        config.kernel_iface  = a.name;
        config.min_data_room = af_packet_frame;
        LOOM_ASSIGN(auto p, port::open(config));
        return std::unique_ptr<datagram_listener>(
            std::make_unique<af_packet_listener>(a.name, std::move(p)));
    }
    int64_t ids = std::clamp<int64_t>(params::memif_ids.get(), 1, 64);
    std::vector<std::unique_ptr<port>> ports;
    config.wait_link = false;  // a server's link comes up when its client connects
    for (int64_t id = 0; id < ids; ++id) {
        config.device = memif_device(a.name, true, id);
        LOOM_ASSIGN(auto p, port::open(config));
        ports.push_back(std::move(p));
    }
    LOOM_ASSIGN(int ids_fd, memif_ids::listen(a.name));
    return std::unique_ptr<datagram_listener>(
        std::make_unique<memif_listener>(a.name, std::move(ports), ids_fd));
}

}  // namespace loom::drivers::dpdk
