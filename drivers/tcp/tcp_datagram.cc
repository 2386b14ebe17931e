// tcp's datagram endpoint (drivers/datagram.hh): one non-blocking TCP connection per
// endpoint, each datagram one frame on the stream (4-byte big-endian length, then the bytes).
//
// Sending never blocks: what the socket does not take now goes to a bounded userspace buffer
// (allocated once) that later send/recv calls flush; when that is full too the frame is
// dropped and counted, as a full queue does on every datagram endpoint. A frame is never
// dropped half sent: once its first byte is on the wire its rest is buffered, so the stream
// stays framed. Receiving reads into one fixed buffer and hands out complete frames in place.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/datagram_internal.hh"

namespace loom::drivers::tcp {
namespace {

constexpr size_t frame_prefix    = 4;
constexpr size_t max_packet      = datagram_max_frame;
constexpr size_t max_frame       = frame_prefix + max_packet;
constexpr size_t send_buffer     = 256 * 1024;  // ~30 full frames behind a slow peer
constexpr size_t receive_buffer  = 64 * 1024;   // several frames per recv syscall
constexpr double first_backoff_s = 0.005;       // a node that is not listening yet is
constexpr double max_backoff_s   = 0.1;         // usually only a moment late

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

class tcp_datagram final : public datagram_endpoint {
  public:
    tcp_datagram(int fd, std::string address)
        : fd_(fd),
          address_(std::move(address)),
          out_(new uint8_t[send_buffer]),
          in_(new uint8_t[receive_buffer]) {
        int one = 1;  // a packet is a whole message: do not hold it back for Nagle
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~tcp_datagram() override { close(); }

    void send(const uint8_t* packet, size_t len) override;
    bool recv(const uint8_t** packet, size_t* len) override;
    bool alive() const override { return fd_ >= 0; }
    std::string describe() const override {
        return address_ + (fd_ >= 0 ? " (fd " + std::to_string(fd_) + ")" : " (closed)");
    }
    const datagram_stats& stats() const override { return stats_; }

  private:
    void flush();
    bool append(const uint8_t* bytes, size_t len);
    void fail(int err);
    void close();

    int fd_;
    std::string address_;
    datagram_stats stats_;
    // Pending output: bytes [out_start_, out_end_) of out_, whole frames except that the
    // first may have been sent in part.
    std::unique_ptr<uint8_t[]> out_;
    size_t out_start_ = 0, out_end_ = 0;
    // Input: [in_start_, in_end_) of in_ not yet handed out.
    std::unique_ptr<uint8_t[]> in_;
    size_t in_start_ = 0, in_end_ = 0;
};

void tcp_datagram::close() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void tcp_datagram::fail(int err) {
    // EAGAIN is the normal full/empty socket; anything else (EPIPE, ECONNRESET, …) ends it.
    if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        close();
    }
}

void tcp_datagram::flush() {
    while (out_start_ < out_end_ && fd_ >= 0) {
        ssize_t n = ::send(fd_, out_.get() + out_start_, out_end_ - out_start_,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            fail(errno);
            return;
        }
        out_start_ += size_t(n);
    }
    if (out_start_ == out_end_) {
        out_start_ = out_end_ = 0;
    }
}

bool tcp_datagram::append(const uint8_t* bytes, size_t len) {
    if (out_end_ + len > send_buffer) {
        if (out_end_ - out_start_ + len > send_buffer) {
            return false;
        }
        // Rare (the buffer only fills behind a slow peer): slide the pending bytes down.
        std::memmove(out_.get(), out_.get() + out_start_, out_end_ - out_start_);
        out_end_ -= out_start_;
        out_start_ = 0;
    }
    std::memcpy(out_.get() + out_end_, bytes, len);
    out_end_ += len;
    return true;
}

void tcp_datagram::send(const uint8_t* packet, size_t len) {
    flush();
    if (fd_ < 0 || len > max_packet) {
        ++stats_.send_dropped;
        return;
    }
    uint8_t prefix[frame_prefix] = {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8),
                                    uint8_t(len)};
    size_t frame = frame_prefix + len, done = 0;
    if (out_start_ == out_end_) {
        // Nothing queued ahead of it: straight to the socket, prefix and packet in one call.
        iovec iov[2] = {{prefix, frame_prefix}, {const_cast<uint8_t*>(packet), len}};
        msghdr msg{};
        msg.msg_iov    = iov;
        msg.msg_iovlen = 2;
        ssize_t n      = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            fail(errno);
            if (fd_ < 0) {
                ++stats_.send_dropped;
                return;
            }
        } else {
            done = size_t(n);
        }
    } else if (out_end_ - out_start_ + frame > send_buffer) {
        ++stats_.send_dropped;
        return;
    }
    if (done < frame_prefix) {
        append(prefix + done, frame_prefix - done);  // fits: checked above or buffer empty
        append(packet, len);
    } else if (done < frame) {
        append(packet + (done - frame_prefix), frame - done);
    }
    ++stats_.sent;
    stats_.bytes_sent += len;
}

bool tcp_datagram::recv(const uint8_t** packet, size_t* len) {
    flush();
    for (int attempt = 0; attempt < 2; ++attempt) {
        size_t have = in_end_ - in_start_;
        if (have >= frame_prefix) {
            const uint8_t* p = in_.get() + in_start_;
            size_t frame_len = size_t(p[0]) << 24 | size_t(p[1]) << 16 | size_t(p[2]) << 8 | p[3];
            if (frame_len > max_packet) {
                // The stream is out of step (or not a loom peer): nothing after it can be
                // trusted, so the link closes.
                ++stats_.bad_frames;
                close();
                in_start_ = in_end_ = 0;
                return false;
            }
            if (have >= frame_prefix + frame_len) {
                *packet = p + frame_prefix;
                *len    = frame_len;
                in_start_ += frame_prefix + frame_len;
                ++stats_.received;
                stats_.bytes_received += frame_len;
                return true;
            }
        }
        if (attempt == 1 || fd_ < 0) {
            return false;
        }
        // No whole frame: move the partial one to the front (the previously returned
        // packet is no longer needed) and read more behind it.
        if (in_start_ > 0) {
            std::memmove(in_.get(), in_.get() + in_start_, have);
            in_start_ = 0;
            in_end_   = have;
        }
        ssize_t n = ::recv(fd_, in_.get() + in_end_, receive_buffer - in_end_, MSG_DONTWAIT);
        if (n == 0) {
            close();  // the peer closed
            return false;
        }
        if (n < 0) {
            fail(errno);
            return false;
        }
        in_end_ += size_t(n);
    }
    return false;
}
static_assert(receive_buffer >= max_frame, "a whole frame fits the receive buffer");

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
        return std::make_unique<tcp_datagram>(
            fd, std::string("tcp:") + host + ":" + port + " (from " + address_ + ")");
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
            return std::unique_ptr<datagram_endpoint>(std::make_unique<tcp_datagram>(fd, address));
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
