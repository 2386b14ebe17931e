// The connecting and listening side of tcp's datagram endpoint (tcp_datagram.hh): addresses
// "HOST:PORT" resolved once, a connect that retries with backoff while nobody listens yet,
// and a non-blocking listener.
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/tcp/tcp_datagram.hh"

namespace loom::drivers::tcp {
namespace {

constexpr double first_backoff_s = 0.005;  // a node that is not listening yet is
constexpr double max_backoff_s   = 0.1;    // usually only a moment late

std::string errno_text(int err) {
    return std::string(std::strerror(err));
}

std::string seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g s", s);
    return buf;
}

/// Splits "HOST:PORT" ("[v6]:PORT" too) at the last colon.
bool split_host_port(std::string_view rest, std::string* host, uint16_t* port) {
    size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
        return false;
    }
    std::string_view h = rest.substr(0, colon), p = rest.substr(colon + 1);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
        h = h.substr(1, h.size() - 2);
    }
    unsigned value = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
    if (ec != std::errc() || end != p.data() + p.size() || value > 65535) {
        return false;
    }
    *host = std::string(h);
    *port = uint16_t(value);
    return true;
}

/// Resolves HOST:PORT to its first address (control path: may block on DNS).
status resolve(const std::string& host, uint16_t port, bool passive, sockaddr_storage* out,
               socklen_t* out_len) {
    addrinfo hints{};
    hints.ai_family     = AF_UNSPEC;
    hints.ai_socktype   = SOCK_STREAM;
    hints.ai_flags      = passive ? AI_PASSIVE : 0;
    addrinfo* list      = nullptr;
    std::string service = std::to_string(port);
    int rc              = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
    if (rc != 0) {
        return invalid_argument("tcp:" + host + ":" + service +
                                ": cannot resolve the host: " + ::gai_strerror(rc));
    }
    std::memcpy(out, list->ai_addr, list->ai_addrlen);
    *out_len = list->ai_addrlen;
    ::freeaddrinfo(list);
    return status::ok();
}

class tcp_datagram_listener final : public datagram_listener {
  public:
    tcp_datagram_listener(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
    ~tcp_datagram_listener() override { ::close(fd_); }

    std::unique_ptr<datagram_endpoint> accept() override {
        sockaddr_storage peer{};
        socklen_t peer_len = sizeof peer;
        int fd             = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                                       SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return nullptr;  // EAGAIN, or a connection that vanished: the client retries
        }
        char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
        ::getnameinfo(reinterpret_cast<sockaddr*>(&peer), peer_len, host, sizeof host, port,
                      sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
        return framed_socket(fd,
                             std::string("tcp:") + host + ":" + port + " (from " + address_ + ")");
    }
    std::string address() const override { return address_; }

  private:
    int fd_;
    std::string address_;
};

// "HOST:PORT" → a socket address (passive: for bind).
status datagram_address(std::string_view rest, bool passive, sockaddr_storage* addr,
                        socklen_t* addr_len) {
    std::string host;
    uint16_t port = 0;
    if (!split_host_port(rest, &host, &port)) {
        return invalid_argument("'tcp:" + std::string(rest) + "' is not tcp:HOST:PORT");
    }
    return resolve(host, port, passive, addr, addr_len);
}

}  // namespace

result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s) {
    std::string address = "tcp:" + std::string(rest);
    sockaddr_storage addr{};
    socklen_t addr_len = 0;
    LOOM_CHECK(datagram_address(rest, false, &addr, &addr_len));
    deadline until(timeout_s);
    double backoff_s       = first_backoff_s;
    std::string last_error = "never tried";
    for (;;) {
        int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return system_error("connecting to " + address + ": socket(): " + errno_text(errno));
        }
        int err = 0;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                pollfd p{fd, POLLOUT, 0};
                int wait_ms = int(std::max(0.0, until.remaining_s()) * 1000) + 1;
                err         = ETIMEDOUT;
                if (::poll(&p, 1, wait_ms) > 0) {
                    socklen_t len = sizeof err;
                    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                }
            }
        }
        if (err == 0) {
            return framed_socket(fd, address);
        }
        ::close(fd);
        last_error = errno_text(err);
        if (until.remaining_s() <= 0) {
            return status(LOOM_ERR_TIMEOUT, "cannot connect to " + address + " within " +
                                                seconds(timeout_s) + ": " + last_error);
        }
        // Refused or unreachable: the node may not be listening yet.
        ::usleep(useconds_t(std::min(backoff_s, std::max(0.0, until.remaining_s())) * 1e6));
        backoff_s = std::min(backoff_s * 2, max_backoff_s);
    }
}

result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view rest) {
    std::string address = "tcp:" + std::string(rest);
    sockaddr_storage addr{};
    socklen_t addr_len = 0;
    LOOM_CHECK(datagram_address(rest, true, &addr, &addr_len));
    std::string host;
    uint16_t port = 0;
    split_host_port(rest, &host, &port);  // valid: datagram_address parsed it
    int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return system_error("listening at " + address + ": socket(): " + errno_text(errno));
    }
    int one = 1;  // a restarted node gets its port back despite connections in TIME_WAIT
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 || ::listen(fd, 128) != 0) {
        int err = errno;
        ::close(fd);
        return system_error("listening at " + address + ": " + errno_text(err));
    }
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    uint16_t chosen = addr.ss_family == AF_INET6
                          ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                          : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    bool v6_literal = host.find(':') != std::string::npos;
    std::string shown =
        "tcp:" + (v6_literal ? "[" + host + "]" : host) + ":" + std::to_string(chosen);
    return std::unique_ptr<datagram_listener>(std::make_unique<tcp_datagram_listener>(fd, shown));
}

}  // namespace loom::drivers::tcp
