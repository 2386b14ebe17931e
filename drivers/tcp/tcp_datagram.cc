// SPDX-License-Identifier: Apache-2.0
// tcp's datagram endpoint (drivers/datagram.hh): one non-blocking TCP connection per
// endpoint, each datagram one frame on the stream (4-byte big-endian length, then the bytes).
//
// Sending never blocks: what the socket does not take now goes to a bounded userspace buffer
// (allocated once) that later send/recv calls flush; when that is full too the frame is
// dropped and counted, as a full queue does on every datagram endpoint. A frame is never
// dropped half sent: once its first byte is on the wire its rest is buffered, so the stream
// stays framed. Receiving reads into one fixed buffer and hands out complete frames in place.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/byte_order.hh"
#include "base/net.hh"
#include "drivers/tcp/tcp_datagram.hh"

namespace loom::drivers::tcp {
namespace {

constexpr size_t frame_prefix   = 4;
constexpr size_t max_packet     = datagram_max_frame;
constexpr size_t max_frame      = frame_prefix + max_packet;
constexpr size_t send_buffer    = 256 * 1024;  // ~30 full frames behind a slow peer
constexpr size_t receive_buffer = 64 * 1024;   // several frames per recv syscall

class tcp_datagram final : public datagram_endpoint {
  public:
    tcp_datagram(int fd, std::string address)
        : fd_(fd),
          address_(std::move(address)),
          out_(new uint8_t[send_buffer]),
          in_(new uint8_t[receive_buffer]) {
        net::set_nodelay(fd_);  // a packet is a whole message: do not hold it back for Nagle
    }
    ~tcp_datagram() override { close(); }

    void send(const uint8_t* packet, size_t len) override;
    bool recv(const uint8_t** packet, size_t* len) override;
    bool alive() const override { return fd_ >= 0; }
    std::string describe() const override {
        return address_ + (fd_ >= 0 ? " (fd " + std::to_string(fd_) + ")" : " (closed)");
    }
    const datagram_stats& stats() const override { return stats_; }
    waker idle_waker() override { return waker_of(this); }

    // The waker. A whole frame already read into in_ needs no sleep (token bit 0); else the
    // socket turns readable when the next bytes come, or writable when output waits for
    // room (bit 1). Level-triggered: bytes that came between arm and sleep end it at once.
    uint64_t arm_sleep() const {
        return (whole_frame_buffered() ? 1 : 0) | (out_start_ < out_end_ ? 2 : 0);
    }
    void sleep(uint64_t token, int64_t timeout_ns) const {
        if ((token & 1) != 0 || fd_ < 0 || timeout_ns <= 0) {
            return;
        }
        pollfd p{fd_, short(POLLIN | ((token & 2) != 0 ? POLLOUT : 0)), 0};
        timespec t{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
        ::ppoll(&p, 1, &t, nullptr);
    }
    // No ring(): nothing beside the socket lets another thread end this sleep, so a
    // progress thread over this link naps instead (drivers/waker.hh).

  private:
    bool whole_frame_buffered() const;
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
    uint8_t prefix[frame_prefix];
    be::put32(prefix, uint32_t(len));
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

bool tcp_datagram::whole_frame_buffered() const {
    size_t have = in_end_ - in_start_;
    return have >= frame_prefix && have >= frame_prefix + be::get32(in_.get() + in_start_);
}

bool tcp_datagram::recv(const uint8_t** packet, size_t* len) {
    flush();
    for (int attempt = 0; attempt < 2; ++attempt) {
        size_t have = in_end_ - in_start_;
        if (have >= frame_prefix) {
            const uint8_t* p = in_.get() + in_start_;
            size_t frame_len = be::get32(p);
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

}  // namespace

std::unique_ptr<datagram_endpoint> framed_socket(int fd, std::string address) {
    return std::make_unique<tcp_datagram>(fd, std::move(address));
}

}  // namespace loom::drivers::tcp
