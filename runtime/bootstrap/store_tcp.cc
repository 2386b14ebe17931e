// SPDX-License-Identifier: Apache-2.0
// The TCP key/value store, client side: rank 0 serves (store_tcp_server.cc), the others
// connect, retrying until the deadline, register (rank, size, job) and send requests. Every
// request has a deadline; the messages name the rank, the rendezvous and the key.
#include <endian.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.hh"
#include "bootstrap/store_tcp.hh"

namespace loom::bootstrap::detail {

// ---- frames --------------------------------------------------------------------------------

frame_writer& frame_writer::u8(uint8_t v) {
    buf_.push_back(static_cast<char>(v));
    return *this;
}

frame_writer& frame_writer::u32(uint32_t v) {
    uint32_t le = htole32(v);
    buf_.append(reinterpret_cast<const char*>(&le), 4);
    return *this;
}

frame_writer& frame_writer::str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    buf_.append(s);
    return *this;
}

std::string frame_writer::finish() {
    uint32_t le = htole32(static_cast<uint32_t>(buf_.size() - 4));
    std::memcpy(buf_.data(), &le, 4);
    return std::move(buf_);
}

bool frame_reader::u8(uint8_t* v) {
    if (rest_.empty()) {
        return false;
    }
    *v = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return true;
}

bool frame_reader::u32(uint32_t* v) {
    if (rest_.size() < 4) {
        return false;
    }
    std::memcpy(v, rest_.data(), 4);
    *v = le32toh(*v);
    rest_.remove_prefix(4);
    return true;
}

bool frame_reader::str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || rest_.size() < n) {
        return false;
    }
    s->assign(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return true;
}

// ---- socket I/O with a deadline ------------------------------------------------------------

int recv_frame(int fd, std::string* body, const deadline& until) {
    uint32_t len = 0;
    if (int rc = net::recv_exact(fd, &len, 4, until); rc != 0) {
        return rc;
    }
    len = le32toh(len);
    if (len > max_frame_bytes) {
        return -EPROTO;
    }
    body->resize(len);
    return net::recv_exact(fd, body->data(), len, until);
}

namespace {

// One connection attempt to any address of `where`, bounded by `until` (and by one second,
// so a host that drops SYNs does not eat the whole budget in one try): fd, or -1 and *why.
// *tried gets the addresses the name resolved to (or "nothing: the name did not resolve").
int try_connect(const host_port& where, const deadline& until, std::string* why,
                std::string* tried) {
    auto addresses = net::resolve(where, false);
    if (!addresses) {
        *why   = addresses.error().message();
        *tried = "nothing (the name did not resolve)";
        return -1;
    }
    *tried = net::socket_addresses_text(*addresses);
    int fd = net::connect_tcp(*addresses, until, 1.0, why);
    if (fd >= 0) {
        net::set_nodelay(fd);  // requests are small and answered one at a time
    }
    return fd;
}

// What a rank that could not reach rank 0's store says: this host, the rendezvous, the
// addresses it resolved to, how often they were tried, the last error and what to check.
std::string unreachable_text(const host_port& where, const identity& me, double timeout_s,
                             const std::string& tried, int attempts, const std::string& why) {
    return "bootstrap: rank " + std::to_string(me.rank) + " on host " + net::host_name() +
           " could not reach the rendezvous " + address_text(where) + " within " +
           seconds_text(timeout_s) + ": tried " + tried + ", " + std::to_string(attempts) +
           (attempts == 1 ? " attempt" : " attempts") + ", last error: " + why +
           " (check that rank 0 runs, that LOOM_BOOTSTRAP names an address of rank 0's host "
           "that this host can reach, and that no firewall drops the port)";
}

std::string io_error_text(int rc) {
    if (rc == -ECONNRESET) {
        return "the connection closed (rank 0's store is gone)";
    }
    if (rc == -EPROTO) {
        return "a malformed answer (not a loom rendezvous?)";
    }
    return std::strerror(-rc);
}

// Rank 0: the server, plus lingering until the connected ranks are done with it.
class root_store final : public kv_store {
  public:
    root_store(std::unique_ptr<tcp_server> server, double linger_s)
        : server_(std::move(server)), linger_s_(linger_s) {}
    ~root_store() override { server_->linger(linger_s_); }

    status set(std::string_view key, std::string_view value) override {
        return server_->set(key, value);
    }
    result<std::string> get(std::string_view key, double timeout_s) override {
        return server_->get(key, timeout_s);
    }
    status wait(const std::vector<std::string>& keys, double timeout_s) override {
        return server_->wait(keys, timeout_s);
    }

  private:
    std::unique_ptr<tcp_server> server_;
    double linger_s_;
};

// Ranks 1..N-1: one connection, one request at a time (a mutex: drivers may share the store
// between threads during connect).
class client_store final : public kv_store {
  public:
    client_store(int fd, const host_port& where, const identity& me, double op_timeout_s)
        : fd_(fd), where_(address_text(where)), me_(me), op_timeout_s_(op_timeout_s) {}
    ~client_store() override { close(fd_); }

    // Answers rank 0's challenge and registers; a refusal (authentication, duplicate rank,
    // wrong size or job) is an invalid argument. Rank 0 must prove the secret in turn.
    status hello(const std::string& key);

    status set(std::string_view key, std::string_view value) override {
        frame_writer w;
        std::string answer;
        return request(w.u8(uint8_t(wire_op::set)).str(key).str(value).finish(), op_timeout_s_,
                       "key '" + std::string(key) + "'", &answer);
    }

    result<std::string> get(std::string_view key, double timeout_s) override {
        frame_writer w;
        w.u8(uint8_t(wire_op::get)).u32(timeout_ms(timeout_s)).str(key);
        std::string value;
        if (status st = request(w.finish(), timeout_s, "key '" + std::string(key) + "'", &value);
            !st) {
            return st;
        }
        return value;
    }

    status wait(const std::vector<std::string>& keys, double timeout_s) override {
        frame_writer w;
        w.u8(uint8_t(wire_op::wait)).u32(timeout_ms(timeout_s)).u32(uint32_t(keys.size()));
        for (const auto& k : keys) {
            w.str(k);
        }
        std::string answer;
        return request(w.finish(), timeout_s, std::to_string(keys.size()) + " keys", &answer);
    }

  private:
    static uint32_t timeout_ms(double timeout_s) {
        double ms = std::ceil(std::max(0.0, timeout_s) * 1e3);
        return static_cast<uint32_t>(std::min(ms, double(std::numeric_limits<uint32_t>::max())));
    }

    status request(const std::string& frame, double timeout_s, const std::string& what,
                   std::string* answer);

    std::mutex mu_;
    int fd_;
    std::string where_;
    identity me_;
    double op_timeout_s_;
};

status client_store::request(const std::string& frame, double timeout_s, const std::string& what,
                             std::string* answer) {
    std::lock_guard lock(mu_);
    std::string who = "bootstrap: rank " + std::to_string(me_.rank);
    // The server answers a get/wait at its deadline; the extra second covers the trip, so
    // only a server that stopped answering trips this one.
    deadline until(std::max(0.0, timeout_s) + 1.0);
    std::string body;
    int rc = send_all(fd_, frame, until);
    rc     = rc != 0 ? rc : recv_frame(fd_, &body, until);
    if (rc == -ETIMEDOUT) {
        return timeout_error(who + " got no answer about " + what + " from the rendezvous " +
                             where_ + " within " + seconds_text(timeout_s));
    }
    if (rc != 0) {
        return {LOOM_ERR_PEER_FAILURE, who + " lost the rendezvous " + where_ + " during " + what +
                                           ": " + io_error_text(rc)};
    }
    frame_reader r(body);
    uint8_t code = 0;
    if (!r.u8(&code) || !r.str(answer)) {
        return {LOOM_ERR_PEER_FAILURE, who + " got a malformed answer from " + where_};
    }
    switch (static_cast<wire_reply>(code)) {
        case wire_reply::ok:
            return status::ok();
        case wire_reply::timeout:
            return timeout_error(who + " timed out after " + seconds_text(timeout_s) +
                                 " waiting at the rendezvous " + where_ + " for " + *answer);
        default:
            return invalid_argument(*answer);  // the server's message names rank and cause
    }
}

status client_store::hello(const std::string& key) {
    std::string who = "bootstrap: rank " + std::to_string(me_.rank);
    deadline until(std::min(op_timeout_s_, handshake_s) + 1.0);
    std::string body, server_nonce;
    uint8_t code = 0;
    int rc       = recv_frame(fd_, &body, until);
    frame_reader challenge(body);
    if (rc != 0 || !challenge.u8(&code) || !challenge.str(&server_nonce) ||
        code != uint8_t(wire_reply::ok) || server_nonce.size() != nonce_bytes) {
        return {LOOM_ERR_PEER_FAILURE,
                who + " got no valid challenge from the rendezvous " + where_ + " (" +
                    (rc != 0 ? io_error_text(rc) : "not a loom rendezvous") + ")"};
    }
    LOOM_ASSIGN(std::string client_nonce, fresh_nonce());
    std::string fields = hello_fields(me_.rank, me_.size, me_.job, client_nonce);
    // The frame is the signed fields followed by the tag (a str).
    std::string signed_body =
        fields + frame_writer().str(hello_tag(key, server_nonce, fields)).finish().substr(4);
    uint32_t len = htole32(static_cast<uint32_t>(signed_body.size()));
    std::string whole(reinterpret_cast<const char*>(&len), 4);
    whole += signed_body;
    std::string proof;
    LOOM_CHECK(request(whole, op_timeout_s_, "registration", &proof));
    if (!tags_equal(proof, server_tag(key, server_nonce, client_nonce))) {
        return invalid_argument(who + ": the rendezvous " + where_ +
                                " did not prove that it holds the job's LOOM_JOB_SECRET "
                                "(another job's rank 0 on that port?)");
    }
    return status::ok();
}

}  // namespace

result<std::unique_ptr<kv_store>> open_tcp_store(const host_port& where, const identity& me,
                                                 double timeout_s) {
    LOOM_ASSIGN(std::string key, job_key(me, address_text(where)));
    if (me.rank == 0) {
        LOOM_ASSIGN(auto server, tcp_server::start(where, me, key));
        double linger_s = std::min(timeout_s, me.linger_s);
        return std::unique_ptr<kv_store>(new root_store(std::move(server), linger_s));
    }
    deadline until(timeout_s);
    backoff wait(0.1);
    std::string why = "no attempt", tried = "nothing";
    int attempts = 0;
    for (;;) {
        ++attempts;
        int fd = try_connect(where, until, &why, &tried);
        if (fd >= 0) {
            auto store = std::make_unique<client_store>(fd, where, me, timeout_s);
            status st  = store->hello(key);
            // Closed before its challenge: rank 0 was full of connections that had not yet
            // authenticated (an outsider's flood): try again, as after a refused connect.
            if (st.code() == LOOM_ERR_PEER_FAILURE &&
                st.message().find("no valid challenge") != std::string::npos && !until.expired()) {
                why = st.message();
                wait.pause(until.remaining_s());
                continue;
            }
            LOOM_CHECK(st);
            return std::unique_ptr<kv_store>(std::move(store));
        }
        // No attempt after the pause that used up the budget: it could only time out at
        // once and would hide the last real error (refused, unreachable).
        wait.pause(until.remaining_s());
        if (until.expired()) {
            return timeout_error(unreachable_text(where, me, timeout_s, tried, attempts, why));
        }
    }
}

}  // namespace loom::bootstrap::detail
