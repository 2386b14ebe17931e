// SPDX-License-Identifier: Apache-2.0
// The memif interface id hand-out (dpdk_memif_ids.hh): an abstract Unix stream socket, a
// one-byte answer per connection.
#include "drivers/dpdk/dpdk_memif_ids.hh"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "base/clock.hh"

namespace loom::drivers::dpdk::memif_ids {
namespace {

constexpr uint8_t none_left = 0xff;

result<sockaddr_un> address_of(const std::string& name, socklen_t* len) {
    sockaddr_un a{};
    a.sun_family     = AF_UNIX;
    std::string path = "loom-memif-ids-" + name;
    if (path.size() + 1 > sizeof a.sun_path) {
        return invalid_argument("dpdk:memif:" + name + ": the name is too long");
    }
    memcpy(a.sun_path + 1, path.data(), path.size());  // abstract: a leading NUL
    *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + path.size());
    return a;
}

}  // namespace

result<int> listen(const std::string& name) {
    socklen_t len = 0;
    auto a        = address_of(name, &len);
    if (!a) {
        return a.error();
    }
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&*a), len) != 0 ||
        ::listen(fd, 64) != 0) {
        int e = errno;
        if (fd >= 0) {
            ::close(fd);
        }
        return system_error("dpdk:memif:" + name +
                            ": the interface id socket: " + std::strerror(e) +
                            (e == EADDRINUSE ? " (a listener of that name "
                                               "is running)"
                                             : ""));
    }
    return fd;
}

void serve(int fd, std::vector<bool>& available) {
    for (;;) {
        int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
            return;  // none waiting (EAGAIN), or an error the next poll sees again
        }
        uint8_t id = none_left;
        for (size_t i = 0; i < available.size() && i < none_left; ++i) {
            if (available[i]) {
                available[i] = false;
                id           = uint8_t(i);
                break;
            }
        }
        (void)!::send(c, &id, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(c);
    }
}

result<int64_t> ask(const std::string& name, double timeout_s) {
    socklen_t len = 0;
    auto a        = address_of(name, &len);
    if (!a) {
        return a.error();
    }
    deadline until(timeout_s);
    std::string what = "dpdk:memif:" + name;
    for (;;) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return system_error(what + ": socket: " + std::strerror(errno));
        }
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&*a), len) == 0) {
            pollfd p{fd, POLLIN, 0};
            int ms     = int(std::max(until.remaining_s(), 0.0) * 1000) + 1;
            uint8_t id = none_left;
            bool got   = ::poll(&p, 1, ms) == 1 && ::recv(fd, &id, 1, 0) == 1;
            ::close(fd);
            if (!got) {
                return status(LOOM_ERR_TIMEOUT, what +
                                                    ": the listener gave no interface id "
                                                    "within " +
                                                    std::to_string(timeout_s) + " s");
            }
            if (id == none_left) {
                return status(LOOM_ERR_NO_RESOURCE,
                              what +
                                  ": the listener has no interface id left "
                                  "(its LOOM_DPDK_MEMIF_IDS; each serves one connection)");
            }
            return int64_t(id);
        }
        ::close(fd);
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT,
                          what + ": no listener within " + std::to_string(timeout_s) + " s");
        }
        ::usleep(10000);  // not listening yet
    }
}

}  // namespace loom::drivers::dpdk::memif_ids
