// SPDX-License-Identifier: Apache-2.0
// The connecting and listening side of tcp's datagram endpoint (tcp_datagram.hh): addresses
// "HOST:PORT" resolved once, a connect that retries with backoff while nobody listens yet,
// and a non-blocking listener.
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "base/check.hh"
#include "base/net.hh"
#include "drivers/tcp/tcp_datagram.hh"

namespace loom::drivers::tcp {
namespace {

constexpr double first_backoff_s = 0.005;  // a node that is not listening yet is
constexpr double max_backoff_s   = 0.1;    // usually only a moment late

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

// "HOST:PORT" (port 0: any free port, for listening).
result<net::host_port> datagram_address(std::string_view rest) {
    net::host_port where;
    if (net::parse_host_port(rest, &where, 0) != nullptr) {
        return invalid_argument("'tcp:" + std::string(rest) + "' is not tcp:HOST:PORT");
    }
    return where;
}

}  // namespace

result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s) {
    std::string address = "tcp:" + std::string(rest);
    LOOM_ASSIGN(net::host_port where, datagram_address(rest));
    auto addresses = net::resolve(where, false);  // once: a name that does not resolve now
    if (!addresses) {                             // will not a moment later
        return invalid_argument(address + ": " + addresses.error().message());
    }
    deadline until(timeout_s);
    net::backoff pause(max_backoff_s, first_backoff_s);
    std::string last_error = "never tried";
    for (;;) {
        int fd = net::connect_tcp(*addresses, until, timeout_s, &last_error);
        if (fd >= 0) {
            return framed_socket(fd, address);
        }
        if (until.remaining_s() <= 0) {
            return status(LOOM_ERR_TIMEOUT, "cannot connect to " + address + " within " +
                                                net::seconds_text(timeout_s) + ": " + last_error);
        }
        // Refused or unreachable: the node may not be listening yet.
        pause.pause(until.remaining_s());
    }
}

result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view rest) {
    LOOM_ASSIGN(net::host_port where, datagram_address(rest));
    auto fd = net::listen_tcp(where, 128, true);
    if (!fd) {
        return status(fd.error().code(),
                      "listening at tcp:" + std::string(rest) + ": " + fd.error().message());
    }
    where.port = net::local_port(*fd);
    return std::unique_ptr<datagram_listener>(
        std::make_unique<tcp_datagram_listener>(*fd, "tcp:" + net::address_text(where)));
}

}  // namespace loom::drivers::tcp
