// SPDX-License-Identifier: Apache-2.0
// The tcp driver's connections: publish the listen address, then connect to every higher
// peer and accept every lower one, with a handshake that names both ranks. Control path:
// it may block, always within the connect deadline.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "base/net.hh"
#include "drivers/common/peer_set.hh"
#include "drivers/tcp/tcp.hh"

namespace loom::drivers::tcp {
namespace {

constexpr double first_backoff_s = 0.005;  // retry a refused connect soon: the peer is
constexpr double max_backoff_s   = 0.2;    // usually only a moment late

/// One outgoing connection being set up.
struct dial {
    enum class stage { idle, connecting, sending, receiving, done };
    int rank = -1;
    sockaddr_in addr{};
    std::string addr_text;
    int fd          = -1;
    stage st        = stage::idle;
    double retry_at = 0, backoff_s = first_backoff_s;
    std::string last_error = "never tried";
    int attempts           = 0;
    hello out{}, in{};
    size_t sent = 0, got = 0;
};

/// One accepted connection whose hello has not fully arrived.
struct inbound {
    int fd = -1;
    hello in{};
    size_t got = 0;
};

class handshaker {
  public:
    // `listened`: the address this rank published, which lower ranks dial.
    handshaker(int rank, int size, uint64_t job, const settings& s, const std::string& listened)
        : rank_(rank),
          size_(size),
          job_(job),
          settings_(s),
          fds_(size_t(size), -1),
          expect_in_(size_t(size), false),
          host_(net::host_name()),
          listened_(listened),
          who_("tcp: rank " + std::to_string(rank) + " on host " + host_ + ": ") {}
    ~handshaker();

    result<std::vector<int>> run(int lfd, const std::vector<int>& ranks, kv_store& store,
                                 double timeout_s);

  private:
    status resolve(kv_store& store, const deadline& dl, double timeout_s);
    void start(dial& d);
    void retry(dial& d, const std::string& why);
    status step_dial(dial& d, short revents);
    status check_reply(dial& d);
    void accept_all(int lfd);
    status step_inbound(inbound& in, bool* finished);
    status judge(const hello& h, int fd);
    hello make(hello_kind kind, int to, reject_reason why) const;
    bool all_done() const;
    status timeout_error(double timeout_s) const;

    int rank_, size_;
    uint64_t job_;
    const settings& settings_;
    std::vector<int> fds_;         // by rank: the handshaken connection
    std::vector<bool> expect_in_;  // by rank: a lower peer that connects to us
    std::vector<dial> dials_;
    std::vector<inbound> inbound_;
    std::string host_;      // this host's name, for messages
    std::string listened_;  // the address this rank published
    std::string who_;
    bool handed_over_ = false;
};

handshaker::~handshaker() {
    // On failure nothing is handed over: close every connection made so far.
    for (size_t r = 0; r < fds_.size() && !handed_over_; ++r) {
        if (fds_[r] >= 0) {
            ::close(fds_[r]);
        }
    }
    for (auto& d : dials_) {
        if (d.fd >= 0 && d.st != dial::stage::done) {
            ::close(d.fd);
        }
    }
    for (auto& in : inbound_) {
        ::close(in.fd);
    }
}

hello handshaker::make(hello_kind kind, int to, reject_reason why) const {
    return hello{.magic       = hello_magic,
                 .version     = hello_version,
                 .kind        = uint16_t(kind),
                 .from_rank   = rank_,
                 .to_rank     = to,
                 .size        = size_,
                 .eager_limit = uint32_t(settings_.eager_limit),
                 .send_queue  = settings_.send_queue,
                 .reason      = uint32_t(why),
                 .job_hash    = job_};
}

status handshaker::resolve(kv_store& store, const deadline& dl, double timeout_s) {
    for (auto& d : dials_) {
        std::string key = "tcp/" + std::to_string(d.rank);
        auto value      = store.get(key, std::max(0.0, dl.remaining_s()));
        if (!value) {
            if (value.error().code() == LOOM_ERR_TIMEOUT) {
                // Every peer still missing, not only the first: a look without waiting.
                std::string missing;
                for (const auto& later : dials_) {
                    if (&later >= &d && !store.get("tcp/" + std::to_string(later.rank), 0)) {
                        missing += (missing.empty() ? "" : ",") + std::to_string(later.rank);
                    }
                }
                return {LOOM_ERR_TIMEOUT,
                        who_ + (missing.find(',') == std::string::npos ? "rank " : "ranks ") +
                            missing + " did not publish a tcp address (key " + key + "…) within " +
                            net::seconds_text(timeout_s) + ": " + value.error().message()};
            }
            status st = value.error();
            return st.prefix(who_ + "reading the address of rank " + std::to_string(d.rank) + ": ");
        }
        d.addr_text = *value;
        if (!parse_address(d.addr_text, &d.addr)) {
            return invalid_argument(who_ + "rank " + std::to_string(d.rank) +
                                    " published a malformed tcp address '" + d.addr_text + "'");
        }
        d.out = to_wire(make(hello_kind::hello, d.rank, reject_reason::none));
    }
    return status::ok();
}

void handshaker::start(dial& d) {
    d.sent = d.got = 0;
    ++d.attempts;
    d.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d.fd < 0) {
        retry(d, std::string("socket(): ") + std::strerror(errno));
        return;
    }
    if (::connect(d.fd, reinterpret_cast<const sockaddr*>(&d.addr), sizeof d.addr) == 0) {
        d.st = dial::stage::sending;
    } else if (errno == EINPROGRESS) {
        d.st = dial::stage::connecting;
    } else {
        retry(d, std::strerror(errno));
    }
}

void handshaker::retry(dial& d, const std::string& why) {
    if (d.fd >= 0) {
        ::close(d.fd);
        d.fd = -1;
    }
    d.st         = dial::stage::idle;
    d.last_error = why;
    d.retry_at   = now_s() + d.backoff_s;
    d.backoff_s  = std::min(d.backoff_s * 2, max_backoff_s);
}

status handshaker::check_reply(dial& d) {
    hello h          = from_wire(d.in);
    std::string peer = "rank " + std::to_string(d.rank) + " at " + d.addr_text;
    if (h.magic != hello_magic || h.version != hello_version) {
        return invalid_argument(who_ + "the process at " + d.addr_text + " (published by rank " +
                                std::to_string(d.rank) + ") is not a loom tcp endpoint");
    }
    if (hello_kind(h.kind) == hello_kind::reject) {
        return invalid_argument(who_ + peer +
                                " rejected the handshake: " + to_string(reject_reason(h.reason)));
    }
    if (h.from_rank != d.rank || h.to_rank != rank_ || h.size != size_) {
        return invalid_argument(who_ + "the process at " + d.addr_text + " answered as rank " +
                                std::to_string(h.from_rank) + " of " + std::to_string(h.size) +
                                ", expected rank " + std::to_string(d.rank) + " of " +
                                std::to_string(size_));
    }
    fds_[size_t(d.rank)] = d.fd;
    d.st                 = dial::stage::done;
    return status::ok();
}

status handshaker::step_dial(dial& d, short revents) {
    if (d.st == dial::stage::connecting) {
        int err       = 0;
        socklen_t len = sizeof err;
        ::getsockopt(d.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            retry(d, std::strerror(err));
            return status::ok();
        }
        d.st = dial::stage::sending;
    }
    if (d.st == dial::stage::sending) {
        ssize_t n = ::send(d.fd, reinterpret_cast<const uint8_t*>(&d.out) + d.sent,
                           sizeof d.out - d.sent, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            retry(d, std::strerror(errno));
            return status::ok();
        }
        d.sent += n > 0 ? size_t(n) : 0;
        if (d.sent == sizeof d.out) {
            d.st = dial::stage::receiving;
        }
        return status::ok();
    }
    if (d.st == dial::stage::receiving && (revents & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = ::recv(d.fd, reinterpret_cast<uint8_t*>(&d.in) + d.got, sizeof d.in - d.got, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            retry(d, n == 0 ? "closed during the handshake" : std::strerror(errno));
            return status::ok();
        }
        d.got += n > 0 ? size_t(n) : 0;
        if (d.got == sizeof d.in) {
            return check_reply(d);
        }
    }
    return status::ok();
}

void handshaker::accept_all(int lfd) {
    for (;;) {
        int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return;  // EAGAIN, or a connection that vanished: the dialer retries
        }
        inbound_.push_back(inbound{fd, {}, 0});
    }
}

status handshaker::judge(const hello& h, int fd) {
    std::string from  = "rank " + std::to_string(h.from_rank);
    reject_reason why = reject_reason::none;
    std::string detail;
    if (h.size != size_) {
        why    = reject_reason::wrong_size;
        detail = "a peer claiming " + from + " reports job size " + std::to_string(h.size) +
                 ", but this job has " + std::to_string(size_) + " ranks";
    } else if (h.from_rank < 0 || h.from_rank >= size_) {
        why    = reject_reason::wrong_rank;
        detail = "a handshake names " + from + ", outside 0.." + std::to_string(size_ - 1);
    } else if (h.to_rank != rank_ || !expect_in_[size_t(h.from_rank)]) {
        why    = reject_reason::wrong_rank;
        detail = "a handshake from " + from + " to rank " + std::to_string(h.to_rank) +
                 " is not one this rank accepts (lower ranks in its peer set connect to it)";
    } else if (fds_[size_t(h.from_rank)] >= 0) {
        why    = reject_reason::duplicate_rank;
        detail = "duplicate " + from + ": a second connection claims " + from +
                 ", which is already connected";
    } else if (h.eager_limit != settings_.eager_limit || h.send_queue != settings_.send_queue) {
        why    = reject_reason::wrong_params;
        detail = from + " uses LOOM_TCP_EAGER_LIMIT=" + std::to_string(h.eager_limit) +
                 " LOOM_TCP_SEND_QUEUE=" + std::to_string(h.send_queue) + ", this rank " +
                 std::to_string(settings_.eager_limit) + " and " +
                 std::to_string(settings_.send_queue);
    }
    hello reply = to_wire(make(why == reject_reason::none ? hello_kind::accept : hello_kind::reject,
                               h.from_rank, why));
    // A fresh socket's send buffer always takes 40 bytes; a short write means it broke.
    bool sent = ::send(fd, &reply, sizeof reply, MSG_NOSIGNAL) == ssize_t(sizeof reply);
    if (why != reject_reason::none) {
        ::close(fd);
        return invalid_argument(who_ + detail);
    }
    if (!sent) {
        ::close(fd);  // the dialer sees EOF and retries
        return status::ok();
    }
    fds_[size_t(h.from_rank)] = fd;
    return status::ok();
}

status handshaker::step_inbound(inbound& in, bool* finished) {
    ssize_t n =
        ::recv(in.fd, reinterpret_cast<uint8_t*>(&in.in) + in.got, sizeof in.in - in.got, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        ::close(in.fd);  // gone before its hello: a dialer that gave up, or a port scan
        *finished = true;
        return status::ok();
    }
    in.got += n > 0 ? size_t(n) : 0;
    if (in.got < sizeof in.in) {
        return status::ok();
    }
    *finished = true;
    hello h   = from_wire(in.in);
    if (h.magic != hello_magic || h.version != hello_version ||
        hello_kind(h.kind) != hello_kind::hello) {
        LOOM_LOG_WARN(log::subsystem::net, "%signoring a connection that is not a loom tcp hello",
                      who_.c_str());
        ::close(in.fd);
        return status::ok();
    }
    if (h.job_hash != job_) {
        // Another job's rank found our port (addresses are reused): refuse it, keep waiting.
        hello reply = to_wire(make(hello_kind::reject, h.from_rank, reject_reason::wrong_job));
        (void)::send(in.fd, &reply, sizeof reply, MSG_NOSIGNAL);
        ::close(in.fd);
        LOOM_LOG_WARN(log::subsystem::net, "%srefused a connection from another job's rank %d",
                      who_.c_str(), h.from_rank);
        return status::ok();
    }
    return judge(h, in.fd);
}

bool handshaker::all_done() const {
    for (const auto& d : dials_) {
        if (d.st != dial::stage::done) {
            return false;
        }
    }
    for (size_t r = 0; r < fds_.size(); ++r) {
        if (expect_in_[r] && fds_[r] < 0) {
            return false;
        }
    }
    return true;
}

status handshaker::timeout_error(double timeout_s) const {
    std::string missing;
    bool dialed = false;
    for (const auto& d : dials_) {
        if (d.st != dial::stage::done) {
            missing += std::string(missing.empty() ? "" : "; ") + "connecting to rank " +
                       std::to_string(d.rank) + " at " + d.addr_text + " (tried " +
                       std::to_string(d.attempts) + (d.attempts == 1 ? " time" : " times") +
                       ", last error: " + d.last_error + ")";
            dialed = true;
        }
    }
    for (size_t r = 0; r < fds_.size(); ++r) {
        if (expect_in_[r] && fds_[r] < 0) {
            missing += std::string(missing.empty() ? "" : "; ") + "rank " + std::to_string(r) +
                       " never connected to this rank (it dials " + listened_ +
                       ", the address published here)";
        }
    }
    // What to look at: the peers' published addresses come from LOOM_TCP_ADDR or
    // LOOM_TCP_IFACE on their hosts (else the host's own name), and must be reachable here.
    std::string check = dialed ? ". Check that those ranks run, and that the address each "
                                 "published (LOOM_TCP_ADDR or LOOM_TCP_IFACE on its host) is "
                                 "reachable from " +
                                     host_
                               : "";
    return {LOOM_ERR_TIMEOUT,
            who_ + "timed out after " + net::seconds_text(timeout_s) + ": " + missing + check};
}

result<std::vector<int>> handshaker::run(int lfd, const std::vector<int>& ranks, kv_store& store,
                                         double timeout_s) {
    deadline dl(timeout_s);
    for (int r : ranks) {
        if (r > rank_) {
            dials_.push_back(dial{});
            dials_.back().rank = r;
        } else {
            expect_in_[size_t(r)] = true;
        }
    }
    LOOM_CHECK(resolve(store, dl, timeout_s));
    std::vector<pollfd> pfds;
    while (!all_done()) {
        if (dl.expired()) {
            return timeout_error(timeout_s);
        }
        double now = now_s(), wake = now + 0.02;
        pfds.assign(1, pollfd{lfd, POLLIN, 0});
        for (auto& d : dials_) {
            if (d.st == dial::stage::idle && now >= d.retry_at) {
                start(d);
            }
            if (d.st == dial::stage::idle) {
                wake = std::min(wake, d.retry_at);
            }
            short ev = d.st == dial::stage::receiving ? POLLIN : POLLOUT;
            pfds.push_back(
                pollfd{d.st == dial::stage::idle || d.st == dial::stage::done ? -1 : d.fd, ev, 0});
        }
        for (auto& in : inbound_) {
            pfds.push_back(pollfd{in.fd, POLLIN, 0});
        }
        double wait_s = std::clamp(std::min(wake - now, dl.remaining_s()), 0.001, 0.02);
        if (::poll(pfds.data(), pfds.size(), int(wait_s * 1000)) <= 0) {
            continue;
        }
        for (size_t i = 0; i < dials_.size(); ++i) {
            if (pfds[1 + i].revents != 0) {
                LOOM_CHECK(step_dial(dials_[i], pfds[1 + i].revents));
            }
        }
        size_t base = 1 + dials_.size(), n_in = inbound_.size();
        for (size_t i = n_in; i-- > 0;) {
            bool finished = false;
            if (pfds[base + i].revents != 0) {
                status st = step_inbound(inbound_[i], &finished);
                if (finished) {
                    inbound_.erase(inbound_.begin() + long(i));
                }
                LOOM_CHECK(st);
            }
        }
        if (pfds[0].revents & POLLIN) {
            accept_all(lfd);
        }
    }
    handed_over_ = true;
    return fds_;
}

}  // namespace

status tcp_endpoint::connect() {
    int rank        = config_.rank;
    std::string who = "tcp: rank " + std::to_string(rank) + ": ";
    if (epoll_fd_ >= 0 || closed_) {
        return invalid_argument(who + "connect() called twice or after close()");
    }
    LOOM_ASSIGN(std::vector<int> ranks, common::peer_set(config_, "tcp"));
    if (!ranks.empty()) {
        if (config_.store == nullptr) {
            return invalid_argument(who + "connecting to peers needs a kv_store for addresses");
        }
        int backlog = std::max(16, config_.size);  // every lower peer may dial at once
        LOOM_ASSIGN(int lfd, listen_on(settings_.bind_address, backlog, &published_, rank));
        status st = config_.store->set("tcp/" + std::to_string(rank), published_);
        if (!st.is_ok()) {
            ::close(lfd);
            return st.prefix(who + "publishing the address: ");
        }
        handshaker h(rank, config_.size, job_hash(config_.job), settings_, published_);
        auto fds = h.run(lfd, ranks, *config_.store, config_.timeout_s);
        ::close(lfd);  // every peer is connected (or never will be)
        if (!fds) {
            return fds.error();
        }
        for (int r : ranks) {
            peers_[size_t(r)].fd = (*fds)[size_t(r)];
        }
        LOOM_LOG_INFO(log::subsystem::net, "%sconnected to %zu peers, listened on %s", who.c_str(),
                      ranks.size(), published_.c_str());
    }
    for (int r : ranks) {
        peers_[size_t(r)].rank      = r;
        peers_[size_t(r)].connected = true;
        peer_ranks_.push_back(r);
    }
    return setup_connections();
}

}  // namespace loom::drivers::tcp
