// SPDX-License-Identifier: Apache-2.0
// The hand-shake of shm's datagram endpoint (shm_datagram.hh): "client" is the side that
// connects, "node" the side that listens.
//
// Hand-shake (control path): the node listens on a Unix stream socket in the abstract
// namespace ("\0loom-inc-NAME": nothing on disk to clean up after a crash). A client
// connects, creates and initialises the segment, and passes its fd with SCM_RIGHTS; the node
// maps it, checks its geometry and answers one byte. The socket then stays open only so that
// either side learns when the other is gone: the kernel closes it when a process dies.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "base/check.hh"
#include "base/net.hh"
#include "drivers/shm/shm_datagram.hh"

namespace loom::drivers::shm {
namespace {

using namespace dgram;

constexpr double first_backoff_s = 0.002;
constexpr double max_backoff_s   = 0.05;
constexpr size_t max_pending     = 64;  // connections whose segment has not arrived yet

using net::errno_text;

constexpr int required_seals = F_SEAL_SHRINK | F_SEAL_SEAL;

/// True when no process can shrink the segment any more (a memfd sealed by its creator).
bool sealed(int fd) {
    int seals = ::fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & required_seals) == required_seals;
}

/// Maps a segment fd (both sides); null on failure.
void* map_segment(int fd) {
    void* p = ::mmap(nullptr, segment_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : p;
}

/// Receives the segment fd a client passes (non-blocking); -1 while none has arrived, -2 when
/// the connection is broken or sent something else.
int receive_fd(int sock) {
    segment_header h{};
    iovec iov{&h, sizeof h};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = control;
    msg.msg_controllen = sizeof control;
    ssize_t n          = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return -1;
    }
    int fd        = -2;
    cmsghdr* cmsg = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr;
    if (cmsg != nullptr && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
        std::memcpy(&fd, CMSG_DATA(cmsg), sizeof fd);
    }
    // The geometry travels twice (message and segment) so a mismatched build is refused.
    bool valid = n == ssize_t(sizeof h) && h.magic == segment_magic &&
                 h.version == segment_version && h.slots == ring_slots &&
                 h.slot_bytes == slot_bytes;
    if (fd >= 0 && !valid) {
        ::close(fd);
        fd = -2;
    }
    return fd;
}

class shm_datagram_listener final : public datagram_listener {
  public:
    shm_datagram_listener(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
    ~shm_datagram_listener() override {
        for (int s : pending_) {
            ::close(s);
        }
        ::close(fd_);
    }

    std::unique_ptr<datagram_endpoint> accept() override {
        for (;;) {
            int s = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (s < 0) {
                break;
            }
            pending_.push_back(s);
            if (pending_.size() > max_pending) {
                ::close(
                    pending_.front());  // a flood of hand-shakes never finished: the oldest goes
                pending_.erase(pending_.begin());
            }
        }
        // A connection becomes a link once its segment fd has arrived (it may lag accept).
        for (size_t i = 0; i < pending_.size(); ++i) {
            int s  = pending_[i];
            int fd = receive_fd(s);
            if (fd == -1) {
                continue;
            }
            pending_.erase(pending_.begin() + ptrdiff_t(i));
            --i;
            std::unique_ptr<datagram_endpoint> l = adopt(s, fd);
            if (l) {
                return l;
            }
        }
        return nullptr;
    }
    std::string address() const override { return "shm:" + name_; }

  private:
    // The node maps a segment its client created, so the client could shrink it later and
    // every read of the node would raise SIGBUS. The client seals it (F_SEAL_SHRINK: no
    // process can shrink it any more, F_SEAL_SEAL: nor lift that), and the node maps only a
    // sealed memfd of the full size. That costs nothing per packet, unlike checking the
    // size before each touch, and needs no signal handler in the node.
    std::unique_ptr<datagram_endpoint> adopt(int sock, int fd) {
        struct stat st {};
        void* seg = nullptr;
        if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            size_t(st.st_size) >= segment_bytes() && sealed(fd)) {
            seg = map_segment(fd);
        }
        if (fd >= 0) {
            ::close(fd);  // the mapping keeps the segment
        }
        const auto* h = static_cast<const segment_header*>(seg);
        char ok       = 1;
        if (seg == nullptr || h->magic != segment_magic || h->slots != ring_slots ||
            h->slot_bytes != slot_bytes || ::send(sock, &ok, 1, MSG_NOSIGNAL) != 1) {
            if (seg != nullptr) {
                ::munmap(seg, segment_bytes());
            }
            ::close(sock);  // the client's connect fails on the closed socket
            return nullptr;
        }
        return ring_endpoint(sock, seg, 1, "shm:" + name_ + " (node)");
    }

    int fd_;
    std::string name_;
    std::vector<int> pending_;  // accepted, segment not yet received
};

/// Connects the Unix socket, retrying while nobody listens; -1 and *why at the deadline.
int dial(const unix_address& to, const deadline& until, std::string* why) {
    net::backoff pause(max_backoff_s, first_backoff_s);
    for (;;) {
        int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) {
            *why = "socket(): " + errno_text(errno);
            return -1;
        }
        if (::connect(s, reinterpret_cast<const sockaddr*>(&to.addr), to.len) == 0) {
            return s;
        }
        *why = errno_text(errno);
        ::close(s);
        if (until.remaining_s() <= 0) {
            return -1;
        }
        pause.pause(until.remaining_s());
    }
}

}  // namespace

namespace dgram {

result<unix_address> socket_address(std::string_view name) {
    unix_address out;
    std::string path = std::string(1, '\0') + "loom-inc-" + std::string(name);
    if (name.empty() || path.size() > sizeof out.addr.sun_path) {
        return invalid_argument("'shm:" + std::string(name) + "': NAME must be 1.." +
                                std::to_string(sizeof out.addr.sun_path - 10) + " characters");
    }
    out.addr.sun_family = AF_UNIX;
    std::memcpy(out.addr.sun_path, path.data(), path.size());
    out.len = socklen_t(offsetof(sockaddr_un, sun_path) + path.size());
    return out;
}

ssize_t send_with_fd(int sock, const void* bytes, size_t len, int fd) {
    iovec iov{const_cast<void*>(bytes), len};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cmsg      = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level   = SOL_SOCKET;
    cmsg->cmsg_type    = SCM_RIGHTS;
    cmsg->cmsg_len     = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
    return ::sendmsg(sock, &msg, MSG_NOSIGNAL);
}

}  // namespace dgram

result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view name,
                                                            double timeout_s) {
    std::string address = "shm:" + std::string(name);
    LOOM_ASSIGN(unix_address to, socket_address(name));
    deadline until(timeout_s);
    std::string why;
    int sock = dial(to, until, &why);
    if (sock < 0) {
        return status(LOOM_ERR_TIMEOUT, "cannot connect to " + address + " within " +
                                            net::seconds_text(timeout_s) + ": " + why);
    }
    int fd = ::memfd_create("loom-inc-link", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ::ftruncate(fd, off_t(segment_bytes())) != 0 ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int err = errno;
        if (fd >= 0) {
            ::close(fd);
        }
        ::close(sock);
        return system_error("connecting to " + address + ": shared memory: " + errno_text(err));
    }
    void* seg = map_segment(fd);
    if (seg == nullptr) {
        int err = errno;
        ::close(fd);
        ::close(sock);
        return system_error("connecting to " + address + ": mmap: " + errno_text(err));
    }
    // Initialise before the fd leaves: sendmsg orders these writes before the node's mmap.
    segment_header h{segment_magic, segment_version, ring_slots, slot_bytes};
    std::memcpy(seg, &h, sizeof h);
    char* rings = static_cast<char*>(seg) + cache_line;
    loom::ring_spsc_init(rings);
    loom::ring_spsc_init(rings + ring_bytes());

    ssize_t sent = send_with_fd(sock, &h, sizeof h, fd);
    ::close(fd);  // the node has its own copy now; the mapping keeps ours
    // The node answers one byte once it has mapped the segment (it accepts from its poll
    // loop, so this waits for that loop, within the deadline).
    char ok          = 0;
    ssize_t got      = -1;
    std::string fail = sent == ssize_t(sizeof h) ? "no answer" : "sendmsg: " + errno_text(errno);
    if (sent == ssize_t(sizeof h)) {
        if (net::wait_fd(sock, POLLIN, until) == 0) {
            got  = ::recv(sock, &ok, 1, MSG_DONTWAIT);
            fail = got == 0 ? "the node closed the connection (segment refused)" : fail;
        }
    }
    if (got != 1 || ok != 1) {
        ::munmap(seg, segment_bytes());
        ::close(sock);
        return status(LOOM_ERR_TIMEOUT, "cannot connect to " + address + " within " +
                                            net::seconds_text(timeout_s) + ": " + fail);
    }
    return ring_endpoint(sock, seg, 0, address);
}

result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view name) {
    std::string address = "shm:" + std::string(name);
    LOOM_ASSIGN(unix_address at, socket_address(name));
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return system_error("listening at " + address + ": socket(): " + errno_text(errno));
    }
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&at.addr), at.len) != 0 ||
        ::listen(fd, 128) != 0) {
        int err = errno;
        ::close(fd);
        return system_error("listening at " + address + ": " + errno_text(err) +
                            (err == EADDRINUSE ? " (another node listens there)" : ""));
    }
    return std::unique_ptr<datagram_listener>(
        std::make_unique<shm_datagram_listener>(fd, std::string(name)));
}

}  // namespace loom::drivers::shm
