// SPDX-License-Identifier: Apache-2.0
// Socket helpers for the control path (net.hh).
#include "net.hh"

#include "check.hh"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace loom::net {

std::string errno_text(int err) {
    return std::strerror(err);
}

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g s", seconds);
    return text;
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
        return "localhost";
    }
    return buf;
}

const char* parse_host_port(std::string_view text, host_port* out, unsigned min_port) {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        return "has no ':port'";
    }
    std::string_view host = text.substr(0, colon);
    std::string_view port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        return "has an IPv6 host without [brackets]";
    }
    if (host.empty()) {
        return "has an empty host";
    }
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < min_port ||
        value > 65535) {
        return min_port == 0 ? "has a port that is not in 0..65535"
                             : "has a port that is not in 1..65535";
    }
    *out = host_port{std::string(host), uint16_t(value)};
    return nullptr;
}

std::string address_text(const host_port& where) {
    bool v6 = where.host.find(':') != std::string::npos;
    return (v6 ? "[" + where.host + "]" : where.host) + ":" + std::to_string(where.port);
}

result<std::vector<socket_address>> resolve(const host_port& where, bool passive) {
    addrinfo hints{};
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    addrinfo* list    = nullptr;
    std::string port  = std::to_string(where.port);
    if (int rc = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &list); rc != 0) {
        return invalid_argument("cannot resolve the host '" + where.host +
                                "': " + ::gai_strerror(rc));
    }
    std::vector<socket_address> out;
    for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
        socket_address a;
        std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
        a.len = ai->ai_addrlen;
        out.push_back(a);
    }
    ::freeaddrinfo(list);
    return out;
}

std::string socket_address_text(const socket_address& a) {
    char host[NI_MAXHOST] = {}, port[NI_MAXSERV] = {};
    if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a.addr), a.len, host, sizeof host, port,
                      sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return "(an address of family " + std::to_string(a.addr.ss_family) + ")";
    }
    bool v6 = a.addr.ss_family == AF_INET6;
    return (v6 ? "[" : "") + std::string(host) + (v6 ? "]:" : ":") + port;
}

std::string socket_addresses_text(const std::vector<socket_address>& addresses) {
    std::string out;
    for (const auto& a : addresses) {
        out += (out.empty() ? "" : ", ") + socket_address_text(a);
    }
    return out;
}

namespace {

// The first of `addresses` that `use` (bind, connect: 0 or an errno) accepts on a fresh
// non-blocking TCP socket: that socket; -1 and *err the last errno when none does.
template <class Use>
int first_accepted(const std::vector<socket_address>& addresses, int* err, Use use) {
    for (const socket_address& a : addresses) {
        int fd = ::socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        *err   = fd < 0 ? errno : use(fd, a);
        if (*err == 0) {
            return fd;
        }
        if (fd >= 0) {
            ::close(fd);
        }
    }
    return -1;
}

}  // namespace

result<int> listen_tcp(const host_port& where, int backlog, bool reuse_address, int* err) {
    int unused = 0;
    err        = err != nullptr ? err : &unused;
    *err       = 0;
    LOOM_ASSIGN(std::vector<socket_address> addresses, resolve(where, true));
    *err   = EADDRNOTAVAIL;
    int fd = first_accepted(addresses, err, [&](int s, const socket_address& a) {
        int one = 1;
        if (reuse_address) {
            ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        }
        return ::bind(s, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0 ? 0 : errno;
    });
    if (fd >= 0 && ::listen(fd, backlog) != 0) {
        *err = errno;
        ::close(fd);
        fd = -1;
    }
    if (fd < 0) {
        return system_error(errno_text(*err));
    }
    *err = 0;
    return fd;
}

uint16_t local_port(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        return 0;
    }
    return a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
}

int connect_tcp(const std::vector<socket_address>& addresses, const deadline& until,
                double attempt_s, std::string* why) {
    int err = 0;
    int fd  = first_accepted(addresses, &err, [&](int s, const socket_address& a) {
        int e = ::connect(s, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0 ? 0 : errno;
        if (e == EINPROGRESS) {
            deadline attempt(std::min(attempt_s, until.remaining_s()));
            e              = -wait_fd(s, POLLOUT, attempt);
            socklen_t size = sizeof e;
            if (e == 0) {
                ::getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &size);
            }
        }
        return e;
    });
    if (fd < 0) {
        *why = errno_text(err);
    }
    return fd;
}

void set_nodelay(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int wait_fd(int fd, short events, const deadline& until) {
    for (;;) {
        double left = until.remaining_s();
        if (left <= 0) {
            return -ETIMEDOUT;
        }
        pollfd p{fd, events, 0};
        int n = ::poll(&p, 1, int(std::ceil(std::min(left, 3600.0) * 1e3)));
        if (n > 0) {
            return 0;
        }
        if (n < 0 && errno != EINTR) {
            return -errno;
        }
    }
}

int send_all(int fd, std::string_view data, const deadline& until) {
    while (!data.empty()) {
        ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(size_t(n));
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (int rc = wait_fd(fd, POLLOUT, until); rc != 0) {
                return rc;
            }
        } else {
            return errno == EPIPE ? -ECONNRESET : -errno;
        }
    }
    return 0;
}

int recv_exact(int fd, void* out, size_t len, const deadline& until) {
    char* at = static_cast<char*>(out);
    while (len > 0) {
        ssize_t n = ::recv(fd, at, len, 0);
        if (n > 0) {
            at += n;
            len -= size_t(n);
        } else if (n == 0) {
            return -ECONNRESET;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (int rc = wait_fd(fd, POLLIN, until); rc != 0) {
                return rc;
            }
        } else {
            return -errno;
        }
    }
    return 0;
}

void backoff::pause(double remaining_s) {
    double s = std::max(0.0, std::min(next_s_, remaining_s));
    timespec ts{time_t(s), long((s - double(time_t(s))) * 1e9)};
    ::nanosleep(&ts, nullptr);
    next_s_ = std::min(next_s_ * 2, max_s_);
}

}  // namespace loom::net
