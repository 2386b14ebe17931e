// SPDX-License-Identifier: Apache-2.0
// Rank 0's side of the TCP store: one thread, one poll() over the listening socket, an
// eventfd and the connected ranks. It checks that every rank registers once with the right
// job and size, answers set/get/wait, and parks get/wait until their keys exist or their
// deadline passes (store_tcp.hh has the wire format).
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.hh"
#include "bootstrap/store_tcp.hh"

namespace loom::bootstrap::detail {
namespace {

using net::errno_text;

// Binds a listening socket to the first address of `host` at `port`. Never every interface
// unless asked for (LOOM_BOOTSTRAP_LISTEN=0.0.0.0): the rendezvous is reachable only where
// the job says it is.
result<int> listen_on(const std::string& host, const host_port& where, int backlog) {
    host_port bound{host, where.port};
    int err = 0;
    auto fd = net::listen_tcp(bound, backlog, true, &err);
    if (fd) {
        return fd;
    }
    if (err == 0) {  // the rendezvous host does not resolve
        return invalid_argument("bootstrap: rank 0 " + fd.error().message());
    }
    std::string hint = err == EADDRNOTAVAIL
                           ? " (not an address of this host: set LOOM_BOOTSTRAP_LISTEN to one "
                             "that is, or 0.0.0.0 for every interface)"
                           : "";
    return system_error("bootstrap: rank 0 cannot listen on " + address_text(bound) + ": " +
                        errno_text(err) + hint);
}

// Now plus `timeout_s` (none if negative), for a condition variable's wait.
std::chrono::steady_clock::time_point steady_end(double timeout_s) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(std::max(0.0, timeout_s)));
}

}  // namespace

result<std::unique_ptr<tcp_server>> tcp_server::start(const host_port& where, const identity& me,
                                                      std::string key) {
    LOOM_ASSIGN(int fd, listen_on(me.listen.empty() ? where.host : me.listen, where, 64));
    int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake < 0) {
        close(fd);
        return system_error("bootstrap: rank 0 cannot create an eventfd: " + errno_text(errno));
    }
    std::unique_ptr<tcp_server> server(new tcp_server(fd, wake, where, me, std::move(key)));
    server->thread_ = std::thread([s = server.get()] { s->run(); });
    return server;
}

tcp_server::tcp_server(int listen_fd, int wake_fd, const host_port& where, const identity& me,
                       std::string key)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      where_(address_text(where)),
      me_(me),
      key_(std::move(key)),
      ranks_(static_cast<size_t>(me.size), rank_state::never) {
    ranks_[0] = rank_state::connected;  // rank 0 is this process
}

tcp_server::~tcp_server() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    thread_.join();
    for (auto& c : conns_) {
        close(c.fd);
    }
    close(listen_fd_);
    close(wake_fd_);
}

// ---- rank 0's own operations -------------------------------------------------------------

status tcp_server::set(std::string_view key, std::string_view value) {
    {
        std::lock_guard lock(mu_);
        if (!kv_.emplace(std::string(key), std::string(value)).second) {
            return invalid_argument("bootstrap: rank 0 sets key '" + std::string(key) +
                                    "', which is already set");
        }
    }
    cv_.notify_all();
    uint64_t one = 1;  // parked remote waiters may want this key
    (void)!write(wake_fd_, &one, sizeof one);
    return status::ok();
}

result<std::string> tcp_server::get(std::string_view key, double timeout_s) {
    std::vector<std::string> keys{std::string(key)};
    LOOM_CHECK(wait(keys, timeout_s));
    std::lock_guard lock(mu_);
    return kv_.find(key)->second;
}

status tcp_server::wait(const std::vector<std::string>& keys, double timeout_s) {
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, steady_end(timeout_s),
                       [&] { return first_missing(keys) == nullptr; })) {
        return status::ok();
    }
    return timeout_error("bootstrap: rank 0 timed out after " + seconds_text(timeout_s) +
                         " waiting for key '" + *first_missing(keys) + "' (rendezvous " + where_ +
                         " of " + std::to_string(me_.size) +
                         " ranks; never registered: " + never_registered_locked() + ")");
}

void tcp_server::linger(double timeout_s) {
    std::unique_lock lock(mu_);
    // Only ranks still connected may still be reading; one that never came has no use for
    // the store and would only delay rank 0's exit (it will fail to reach the rendezvous).
    cv_.wait_until(lock, steady_end(timeout_s), [&] {
        return std::none_of(ranks_.begin() + 1, ranks_.end(),
                            [](rank_state s) { return s == rank_state::connected; });
    });
}

const std::string* tcp_server::first_missing(const std::vector<std::string>& keys) const {
    auto k =
        std::find_if(keys.begin(), keys.end(), [&](const auto& key) { return !kv_.contains(key); });
    return k == keys.end() ? nullptr : &*k;
}

std::string tcp_server::never_registered_locked() const {
    return missing_ranks(1, me_.size, [&](int r) { return ranks_[r] != rank_state::never; });
}

// ---- the server thread ---------------------------------------------------------------------

void tcp_server::run() {
    std::vector<pollfd> fds;
    for (;;) {
        {
            std::lock_guard lock(mu_);
            if (stop_) {
                return;
            }
        }
        fds.assign({{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}});
        for (const auto& c : conns_) {
            fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
        }
        if (poll(fds.data(), fds.size(), poll_timeout_ms()) < 0 && errno != EINTR) {
            return;  // cannot happen with valid fds; the owners' deadlines still hold
        }
        if (fds[1].revents & POLLIN) {
            uint64_t n;
            (void)!read(wake_fd_, &n, sizeof n);
        }
        for (size_t i = 2; i < fds.size(); ++i) {
            conn& c = conns_[i - 2];
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && !read_conn(c)) {
                drop(c);
            } else if (c.fd >= 0) {
                flush(c);
            }
        }
        if (fds[0].revents & POLLIN) {
            accept_all();
        }
        serve_waiters();
        expire_slow();
        std::erase_if(conns_, [](const conn& c) { return c.fd < 0; });
    }
}

int tcp_server::poll_timeout_ms() const {
    double first  = 0;
    auto consider = [&](double at) {
        if (at > 0) {
            first = first == 0 ? at : std::min(first, at);
        }
    };
    for (const auto& w : waiters_) {
        consider(w.end_s);
    }
    for (const auto& c : conns_) {
        consider(expiry_s(c));
    }
    if (first == 0) {
        return -1;
    }
    return static_cast<int>(std::ceil(std::max(0.0, first - now_s()) * 1e3));
}

double tcp_server::expiry_s(const conn& c) const {
    if (c.fd < 0 || c.close_after_flush) {
        return 0;
    }
    if (c.rank < 0 || !c.in.empty()) {
        return c.since_s + std::min(handshake_s, me_.timeout_s);
    }
    return 0;
}

// A client that does not authenticate in time, or stalls in the middle of a frame, loses
// its connection: half-sent frames cannot pin rank 0's memory or its connection slots.
void tcp_server::expire_slow() {
    double now = now_s();
    for (auto& c : conns_) {
        double at = expiry_s(c);
        if (at > 0 && now >= at) {
            drop(c);
        }
    }
}

void tcp_server::accept_all() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return;  // EAGAIN: all taken; anything else: that client retries
        }
        size_t pending = std::count_if(conns_.begin(), conns_.end(),
                                       [](const conn& c) { return c.fd >= 0 && c.rank < 0; });
        auto nonce     = fresh_nonce();
        if (pending >= max_unauthenticated || !nonce) {
            close(fd);  // a real rank retries until its deadline
            continue;
        }
        conns_.push_back(conn{fd, next_conn_id_++, -1, {}, {}, false, *nonce, now_s()});
        reply(conns_.back(), wire_reply::ok, *nonce);  // the challenge
    }
}

// Reads what has arrived and handles each whole frame as soon as it is complete, so a
// connection never buffers more than one frame of its limit (4 KiB before it has
// authenticated, max_frame_bytes after): the length is checked before a byte is kept.
bool tcp_server::read_conn(conn& c) {
    char buf[4096];
    for (;;) {
        ssize_t n = recv(c.fd, buf, sizeof buf, 0);
        if (n == 0) {
            return false;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        if (c.close_after_flush) {
            continue;  // refused: what it still sends is discarded
        }
        if (c.in.empty() && c.rank >= 0) {
            c.since_s = now_s();  // a frame begins: it has handshake_s to arrive whole
        }
        c.in.append(buf, static_cast<size_t>(n));
        while (c.in.size() >= 4 && !c.close_after_flush) {
            uint32_t len;
            std::memcpy(&len, c.in.data(), 4);
            len = le32toh(len);
            if (len > (c.rank < 0 ? max_hello_bytes : max_frame_bytes)) {
                return false;  // not a loom client, or a corrupt stream
            }
            if (c.in.size() < 4 + size_t{len}) {
                break;
            }
            std::string body = c.in.substr(4, len);
            c.in.erase(0, 4 + size_t{len});
            handle_frame(c, body);
            if (c.fd < 0) {
                return true;  // dropped while answering
            }
        }
    }
}

void tcp_server::handle_frame(conn& c, std::string_view body) {
    frame_reader r(body);
    uint8_t op = 0;
    if (!r.u8(&op)) {
        return reply(c, wire_reply::error, "bootstrap: empty request", true);
    }
    if (static_cast<wire_op>(op) == wire_op::hello) {
        return handle_hello(c, r);
    }
    if (c.rank < 0) {
        return reply(c, wire_reply::error, "bootstrap: request before registration", true);
    }
    handle_request(c, static_cast<wire_op>(op), r);
}

void tcp_server::handle_hello(conn& c, frame_reader& r) {
    uint32_t rank = 0, size = 0;
    std::string job, client_nonce, tag;
    bool parsed = r.u32(&rank) && r.u32(&size) && r.str(&job) && r.str(&client_nonce) &&
                  r.str(&tag) && client_nonce.size() == nonce_bytes;
    // Nothing about the job (its id, size, ranks or keys) is said before the tag checks out.
    std::string expected =
        parsed ? hello_tag(key_, c.nonce, hello_fields(int(rank), int(size), job, client_nonce))
               : std::string();
    if (!parsed || c.rank >= 0 || !tags_equal(tag, expected)) {
        return reply(c, wire_reply::error,
                     "bootstrap: the rendezvous " + where_ +
                         " refused this client: authentication failed (it needs the job's "
                         "LOOM_JOB_SECRET)",
                     true);
    }
    std::string who = "bootstrap: rank " + std::to_string(static_cast<int32_t>(rank));
    std::string error;
    {
        std::lock_guard lock(mu_);
        if (static_cast<int>(size) != me_.size) {
            error = who + " says the job has " + std::to_string(static_cast<int32_t>(size)) +
                    " ranks but rank 0 at " + where_ + " says " + std::to_string(me_.size);
        } else if (job != me_.job) {
            error = who + " is in job '" + job + "' but the rendezvous at " + where_ +
                    " serves job '" + me_.job + "'";
        } else if (rank >= size) {
            error = who + " is out of range for the " + std::to_string(me_.size) +
                    " ranks rank 0 at " + where_ + " serves";
        } else if (rank == 0 || ranks_[rank] != rank_state::never) {
            error = who + " registered twice at the rendezvous " + where_ +
                    " (two processes of job '" + me_.job + "' claim rank " + std::to_string(rank) +
                    ")";
        } else {
            ranks_[rank] = rank_state::connected;
            c.rank       = static_cast<int>(rank);
            c.since_s    = now_s();
        }
    }
    cv_.notify_all();
    if (!error.empty()) {
        return reply(c, wire_reply::error, error, true);
    }
    reply(c, wire_reply::ok, server_tag(key_, c.nonce, client_nonce));
}

void tcp_server::handle_request(conn& c, wire_op op, frame_reader& r) {
    if (op == wire_op::set) {
        std::string key, value;
        if (!r.str(&key) || !r.str(&value)) {
            return reply(c, wire_reply::error, "bootstrap: malformed set", true);
        }
        bool fresh;
        {
            std::lock_guard lock(mu_);
            fresh = kv_.emplace(key, std::move(value)).second;
        }
        cv_.notify_all();
        if (!fresh) {
            return reply(c, wire_reply::error,
                         "bootstrap: rank " + std::to_string(c.rank) + " sets key '" + key +
                             "', which is already set");
        }
        return reply(c, wire_reply::ok, "");
    }
    uint32_t timeout_ms = 0, n = 1;
    waiter w{c.id, {}, 0, op == wire_op::get};
    bool ok = (op == wire_op::get || op == wire_op::wait) && r.u32(&timeout_ms) &&
              (op == wire_op::get || r.u32(&n));
    for (uint32_t i = 0; ok && i < n; ++i) {
        w.keys.emplace_back();
        ok = r.str(&w.keys.back());
    }
    if (!ok) {
        return reply(c, wire_reply::error, "bootstrap: malformed request", true);
    }
    w.end_s = now_s() + timeout_ms * 1e-3;
    waiters_.push_back(std::move(w));  // answered now or later by serve_waiters
}

void tcp_server::serve_waiters() {
    double now = now_s();
    std::erase_if(waiters_, [&](waiter& w) {
        conn* c = find_conn(w.conn_id);
        if (c == nullptr) {
            return true;
        }
        std::string key, value;
        {
            std::lock_guard lock(mu_);
            const std::string* missing = first_missing(w.keys);
            if (missing == nullptr) {
                value = w.wants_value ? kv_.find(w.keys.front())->second : std::string();
            } else if (now >= w.end_s) {
                key = *missing;
            } else {
                return false;
            }
        }
        if (key.empty()) {
            reply(*c, wire_reply::ok, value);
        } else {
            reply(*c, wire_reply::timeout, timeout_detail(key));
        }
        flush(*c);
        return true;
    });
}

std::string tcp_server::timeout_detail(const std::string& key) {
    std::lock_guard lock(mu_);
    return "key '" + key + "'; never registered: " + never_registered_locked();
}

void tcp_server::reply(conn& c, wire_reply code, std::string_view payload, bool close) {
    c.out += frame_writer().u8(static_cast<uint8_t>(code)).str(payload).finish();
    c.close_after_flush = c.close_after_flush || close;
    flush(c);
}

void tcp_server::flush(conn& c) {
    while (!c.out.empty()) {
        ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                drop(c);
            }
            return;
        }
        c.out.erase(0, static_cast<size_t>(n));
    }
    if (c.close_after_flush) {
        drop(c);
    }
}

void tcp_server::drop(conn& c) {
    if (c.fd < 0) {
        return;
    }
    close(c.fd);
    c.fd = -1;
    if (c.rank > 0) {
        std::lock_guard lock(mu_);
        ranks_[c.rank] = rank_state::gone;
    }
    cv_.notify_all();
}

tcp_server::conn* tcp_server::find_conn(uint64_t id) {
    auto c = std::find_if(conns_.begin(), conns_.end(),
                          [&](const conn& each) { return each.id == id && each.fd >= 0; });
    return c == conns_.end() ? nullptr : &*c;
}

}  // namespace loom::bootstrap::detail
