// SPDX-License-Identifier: Apache-2.0
// The tcp driver's device side: its settings, the address it listens on, the listen socket,
// the handshake's wire form, and the per-connection setup after the handshake.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <bit>
#include <cerrno>

#include "base/check.hh"
#include "base/hash.hh"
#include "base/net.hh"
#include "drivers/tcp/tcp.hh"
#include "drivers/tcp/tcp_params.hh"

namespace loom::drivers::tcp {
namespace {

std::string ipv4_text(const in_addr& a) {
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

/// The IPv4 address of interface `iface` (non-empty), or the first non-loopback interface
/// that is up (empty); "" when there is none. `names` collects what exists, for errors.
std::string interface_address(const std::string& iface, std::string* names) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) {
        return "";
    }
    std::string found;
    for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
        if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) {
            continue;
        }
        *names += (names->empty() ? "" : ", ") + std::string(it->ifa_name);
        const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
        bool usable = iface.empty() ? (it->ifa_flags & IFF_UP) && !(it->ifa_flags & IFF_LOOPBACK)
                                    : iface == it->ifa_name;
        if (usable && found.empty()) {
            found = ipv4_text(sin->sin_addr);
        }
    }
    freeifaddrs(list);
    return found;
}

result<std::string> bind_address(int rank) {
    std::string addr = params::addr.get();
    std::string ifc  = params::iface.get();
    if (!addr.empty()) {
        in_addr a;
        if (inet_pton(AF_INET, addr.c_str(), &a) != 1) {
            return invalid_argument("tcp: rank " + std::to_string(rank) + ": LOOM_TCP_ADDR='" +
                                    addr + "' is not an IPv4 address");
        }
        return addr;
    }
    std::string names;
    std::string found = interface_address(ifc, &names);
    if (!ifc.empty() && found.empty()) {
        return invalid_argument("tcp: rank " + std::to_string(rank) + ": LOOM_TCP_IFACE='" + ifc +
                                "' has no IPv4 address (interfaces with one: " + names + ")");
    }
    // No non-loopback interface (a bare network namespace): loopback still joins the ranks
    // of this host.
    return found.empty() ? std::string("127.0.0.1") : found;
}

constexpr size_t staging_bytes = 64 * 1024;  // a batch of small frames per recv()

result<uint64_t> positive_param(const loom::params::int_param& param, int64_t max, int rank) {
    int64_t v = param.get();
    if (v <= 0 || v > max) {
        return invalid_argument("tcp: rank " + std::to_string(rank) + ": " +
                                std::string(param.name()) + "=" + std::to_string(v) +
                                " is out of range 1.." + std::to_string(max));
    }
    return uint64_t(v);
}

}  // namespace

const char* to_string(reject_reason r) {
    switch (r) {
        case reject_reason::none:
            return "no reason";
        case reject_reason::wrong_job:
            return "the connection comes from another job";
        case reject_reason::wrong_size:
            return "the job sizes differ";
        case reject_reason::wrong_rank:
            return "the ranks in the handshake are not a pair that connects this way";
        case reject_reason::duplicate_rank:
            return "that rank is already connected (duplicate rank)";
        case reject_reason::wrong_params:
            return "LOOM_TCP_EAGER_LIMIT or LOOM_TCP_SEND_QUEUE differ between the ranks";
    }
    return "unknown reason";
}

hello to_wire(hello h) {
    h.magic       = htole32(h.magic);
    h.version     = htole16(h.version);
    h.kind        = htole16(h.kind);
    h.from_rank   = int32_t(htole32(uint32_t(h.from_rank)));
    h.to_rank     = int32_t(htole32(uint32_t(h.to_rank)));
    h.size        = int32_t(htole32(uint32_t(h.size)));
    h.eager_limit = htole32(h.eager_limit);
    h.send_queue  = htole32(h.send_queue);
    h.reason      = htole32(h.reason);
    h.job_hash    = htole64(h.job_hash);
    return h;
}

hello from_wire(hello h) {
    // The conversion is its own inverse (a byte swap or nothing).
    return to_wire(h);
}

uint64_t job_hash(const std::string& job) {
    return fnv1a64(job);
}

result<settings> settings_from_params(int rank) {
    settings s;
    LOOM_ASSIGN(s.bind_address, bind_address(rank));
    // The eager limit travels in the handshake as 32 bits; 1 GiB is far beyond where a
    // rendezvous stops costing anything.
    LOOM_ASSIGN(s.eager_limit, positive_param(params::eager_limit, int64_t{1} << 30, rank));
    LOOM_ASSIGN(uint64_t q, positive_param(params::send_queue, int64_t{1} << 20, rank));
    LOOM_ASSIGN(uint64_t m, positive_param(params::max_messages, int64_t{1} << 24, rank));
    LOOM_ASSIGN(s.unexpected_bytes,
                positive_param(params::unexpected_bytes, int64_t{1} << 40, rank));
    s.send_queue   = uint32_t(q);
    s.max_messages = uint32_t(m);
    int64_t sb     = params::sockbuf.get();
    if (sb < 0 || sb > (int64_t{1} << 30)) {
        return invalid_argument("tcp: rank " + std::to_string(rank) + ": LOOM_TCP_SOCKBUF=" +
                                std::to_string(sb) + " is out of range 0..1073741824");
    }
    s.sockbuf_bytes = int(sb);
    return s;
}

result<int> listen_on(const std::string& address, int backlog, std::string* published, int rank) {
    std::string who = "tcp: rank " + std::to_string(rank) + ": ";
    in_addr ipv4;
    if (inet_pton(AF_INET, address.c_str(), &ipv4) != 1) {
        return invalid_argument(who + "cannot listen on '" + address + "': not an IPv4 address");
    }
    // Port 0, ephemeral: several ranks share a host.
    auto fd = net::listen_tcp(net::host_port{address, 0}, backlog, false);
    if (!fd) {
        return system_error(who + "cannot listen on " + address + ": " + fd.error().message());
    }
    *published = address + ":" + std::to_string(net::local_port(*fd));
    return fd;
}

bool parse_address(const std::string& text, sockaddr_in* out) {
    net::host_port where;
    if (net::parse_host_port(text, &where) != nullptr) {
        return false;
    }
    *out            = sockaddr_in{};
    out->sin_family = AF_INET;
    out->sin_port   = htons(where.port);
    return inet_pton(AF_INET, where.host.c_str(), &out->sin_addr) == 1;
}

// Socket options, the epoll set and every per-peer ring, table and pool, sized once here so
// the fast path never allocates (except when the early-arrival pool passes its high-water
// mark).
status tcp_endpoint::setup_connections() {
    std::string who = "tcp: rank " + std::to_string(config_.rank) + ": ";
    epoll_fd_       = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
        return system_error(who + "epoll_create1: " + net::errno_text(errno));
    }
    uint32_t q    = settings_.send_queue;
    uint64_t wire = std::bit_ceil(uint64_t{q} * 2 + control_frames_per_peer + 1);
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        // Small messages go out at once: the engine batches by posting many before polling.
        net::set_nodelay(p.fd);
        if (settings_.sockbuf_bytes > 0) {
            ::setsockopt(p.fd, SOL_SOCKET, SO_SNDBUF, &settings_.sockbuf_bytes, sizeof(int));
            ::setsockopt(p.fd, SOL_SOCKET, SO_RCVBUF, &settings_.sockbuf_bytes, sizeof(int));
        }
        epoll_event ev{};
        ev.events   = EPOLLIN;
        ev.data.u32 = uint32_t(r);
        if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, p.fd, &ev) != 0) {
            return system_error(who + "epoll_ctl(peer " + std::to_string(r) +
                                "): " + net::errno_text(errno));
        }
        p.wire.assign(wire, frame{});
        p.wire_mask = uint32_t(wire - 1);
        p.descs.assign(q, send_desc{});
        p.free_descs.resize(q);
        for (uint32_t i = 0; i < q; ++i) {
            p.free_descs[i] = q - 1 - i;
        }
        p.staging.assign(staging_bytes, 0);
    }
    size_t n_peers = peer_ranks_.size();
    entries_.init(settings_.max_messages);
    pool_.init(settings_.eager_limit, settings_.unexpected_bytes);
    cq_.init(size_t(n_peers) * q + settings_.max_messages + control_completions_held + 1);
    return status::ok();
}

}  // namespace loom::drivers::tcp
