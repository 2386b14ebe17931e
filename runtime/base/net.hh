// SPDX-License-Identifier: Apache-2.0
// Socket helpers for the control path, written once for every place that opens a connection
// (the tcp driver and its datagram endpoint, shm's hand-shake socket, the bootstrap's TCP
// rendezvous, the in-network node): "HOST:PORT" parsing, resolution, non-blocking listen and
// connect, waits and whole reads/writes bounded by a deadline, and how errors and times read
// in messages.
//
// Every descriptor made here is non-blocking and close-on-exec. Nothing here chooses an
// address: a caller that listens names the host, so a rendezvous or node is reachable only
// where the job says (never every interface unless asked for). Not for the fast path: these
// calls may block (resolution, waits) and allocate.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clock.hh"
#include "status.hh"

namespace loom::net {

/// strerror(err) as a string.
std::string errno_text(int err);

/// "2.5 s", "0.05 s": how timeouts read in messages.
std::string seconds_text(double seconds);

/// This host's name (gethostname), "localhost" when it has none: the host a connect
/// error names, so a message from one of many hosts says where it was written.
std::string host_name();

struct host_port {
    std::string host;  // without brackets
    uint16_t port = 0;
};

/// Why `text` is not "HOST:PORT" or "[V6]:PORT" with a port in min_port..65535 ("has no
/// ':port'", …: it follows the quoted text in a message), or null when it is (*out set).
const char* parse_host_port(std::string_view text, host_port* out, unsigned min_port = 1);

/// "host:port", "[v6]:port": how an address reads in messages and is published.
std::string address_text(const host_port& where);

struct socket_address {
    sockaddr_storage addr{};
    socklen_t len = 0;
};

/// Every address of `where` (numeric port; passive: for bind), or an invalid argument that
/// says why the host does not resolve. May block on DNS.
result<std::vector<socket_address>> resolve(const host_port& where, bool passive);

/// "10.0.0.1:29500", "[fe80::1]:29500": a resolved address as a message names what was tried.
std::string socket_address_text(const socket_address& a);

/// The resolved addresses, "a, b, c".
std::string socket_addresses_text(const std::vector<socket_address>& addresses);

/// A listening TCP socket on the first address of `where` that binds (port 0: one the kernel
/// picks; reuse_address: a restarted server gets its port back despite TIME_WAIT). The
/// message is the reason alone, for the caller to prefix; *err gets the errno of a failed
/// socket call (0 when the host did not resolve).
result<int> listen_tcp(const host_port& where, int backlog, bool reuse_address, int* err = nullptr);

/// The port a bound socket got.
uint16_t local_port(int fd);

/// A connected TCP socket to the first of `addresses` that answers, each try bounded by
/// `until` and by attempt_s (a host that drops SYNs does not eat the whole budget); -1 and
/// *why when none did.
int connect_tcp(const std::vector<socket_address>& addresses, const deadline& until,
                double attempt_s, std::string* why);

/// Sends small writes at once (requests, packets): no waiting for Nagle.
void set_nodelay(int fd);

/// Waits for `events` (POLLIN, POLLOUT) on `fd` until the deadline: 0, -ETIMEDOUT or -errno.
int wait_fd(int fd, short events, const deadline& until);

/// Whole writes and reads on a non-blocking socket, waiting within the deadline: 0, or
/// -errno (-ETIMEDOUT when the deadline passed, -ECONNRESET when the peer closed).
int send_all(int fd, std::string_view data, const deadline& until);
int recv_exact(int fd, void* out, size_t len, const deadline& until);

/// Sleeps a little longer each time (from first_s up to max_s, never past the remaining
/// time): how connect loops and stores wait when there is no event to sleep on, so 8 ranks
/// on 2 cores stay cheap.
class backoff {
  public:
    explicit backoff(double max_s = 0.005, double first_s = 100e-6)
        : next_s_(first_s), max_s_(max_s) {}
    void pause(double remaining_s);

  private:
    double next_s_;
    double max_s_;
};

}  // namespace loom::net
