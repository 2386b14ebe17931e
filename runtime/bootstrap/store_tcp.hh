// SPDX-License-Identifier: Apache-2.0
// Internal to runtime/bootstrap: the TCP store's wire format and rank 0's server.
//
// Wire format: every message is a frame, a little-endian u32 body length and the body. A
// request body is an op byte and its fields; strings are a u32 length and the bytes.
//   (server, on accept)                      challenge: ok + str server_nonce (32 bytes)
//   hello  i32 rank, i32 size, str job, str client_nonce, str tag
//                                            → ok + str server_tag | error
//   set    str key, str value                → ok | error (key already set)
//   get    u32 timeout_ms, str key           → ok + str value | timeout + str detail
//   wait   u32 timeout_ms, u32 n, n × str    → ok | timeout + str detail
// Authentication (store_tcp_auth.cc): tag = HMAC(secret, server_nonce + the hello's fields),
// checked in constant time before anything else; server_tag = HMAC(secret, server_nonce +
// client_nonce) proves rank 0 to the client. Until its hello is accepted a connection gets
// nothing but its nonce and one error line that names no job, size or key; its frame may
// be 4 KiB at most, it must finish within handshake_s, and at most max_unauthenticated
// such connections are held (more are closed at once). Keys are written once.
// The server parks a get/wait until its keys exist or its deadline passes, so a waiting
// client costs nothing; the detail of a timeout names the missing key and the ranks that
// never registered, which is usually the real cause.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.hh"
#include "bootstrap/store_internal.hh"

namespace loom::bootstrap::detail {

enum class wire_op : uint8_t { hello = 1, set = 2, get = 3, wait = 4 };
enum class wire_reply : uint8_t { ok = 0, error = 1, timeout = 2 };

// Keys and values are addresses and small blobs; anything near this is a corrupt stream.
constexpr uint32_t max_frame_bytes = 1u << 20;
// A hello: rank, size, a job id of at most 64 characters, a nonce and a tag.
constexpr uint32_t max_hello_bytes = 4096;
constexpr size_t nonce_bytes       = 32;
// Connections that have not yet authenticated, held at once; more are closed on accept.
constexpr size_t max_unauthenticated = 32;
// How long a connection may take to authenticate, or to finish a frame it has begun.
constexpr double handshake_s = 5.0;

/// Builds one frame; finish() fills in the length.
class frame_writer {
  public:
    frame_writer() : buf_(4, '\0') {}
    frame_writer& u8(uint8_t v);
    frame_writer& u32(uint32_t v);
    frame_writer& str(std::string_view s);
    std::string finish();

  private:
    std::string buf_;
};

/// Reads a frame body; every accessor checks the remaining length.
class frame_reader {
  public:
    explicit frame_reader(std::string_view body) : rest_(body) {}
    bool u8(uint8_t* v);
    bool u32(uint32_t* v);
    bool str(std::string* s);

  private:
    std::string_view rest_;
};

/// Blocking-with-deadline socket I/O for the client side: 0, or -errno (-ETIMEDOUT when the
/// deadline passed, -ECONNRESET when the peer closed, -EPROTO for a frame over the limit).
using net::send_all;
int recv_frame(int fd, std::string* body, const deadline& until);

/// The secret's 32 bytes; an error naming LOOM_JOB_SECRET when it is unset or malformed.
result<std::string> job_key(const identity& me, const std::string& where);
/// nonce_bytes fresh random bytes.
result<std::string> fresh_nonce();
/// The hello's fields as they are sent (op, rank, size, job, client nonce): what its tag
/// covers.
std::string hello_fields(int rank, int size, std::string_view job, std::string_view client_nonce);
std::string hello_tag(std::string_view key, std::string_view server_nonce, std::string_view fields);
std::string server_tag(std::string_view key, std::string_view server_nonce,
                       std::string_view client_nonce);
/// Constant-time equality of two tags.
bool tags_equal(std::string_view a, std::string_view b);

/// Rank 0's store server: a thread that accepts the other ranks, checks their registration
/// and serves their requests; rank 0 itself reads and writes the same map directly.
class tcp_server {
  public:
    /// Binds me.listen (else the host of `where`) at the port of `where`; `key` is the
    /// job's secret (job_key).
    static result<std::unique_ptr<tcp_server>> start(const host_port& where, const identity& me,
                                                     std::string key);
    ~tcp_server();

    status set(std::string_view key, std::string_view value);
    result<std::string> get(std::string_view key, double timeout_s);
    status wait(const std::vector<std::string>& keys, double timeout_s);
    /// Waits until every other rank has registered and gone, or `timeout_s` passes: rank 0's
    /// store must outlive the others' use of it.
    void linger(double timeout_s);

  private:
    struct conn {
        int fd      = -1;
        uint64_t id = 0;   // waiters name their connection by id: fds are reused
        int rank    = -1;  // -1 until hello succeeds (authenticated and registered)
        std::string in, out;
        bool close_after_flush = false;
        std::string nonce;   // the challenge sent on accept
        double since_s = 0;  // accepted (unauthenticated) or a frame begun (registered)
    };
    struct waiter {
        uint64_t conn_id;
        std::vector<std::string> keys;
        double end_s;
        bool wants_value;  // get: reply with the value; wait: just ok
    };
    enum class rank_state : uint8_t { never, connected, gone };

    tcp_server(int listen_fd, int wake_fd, const host_port& where, const identity& me,
               std::string key);
    void run();
    int poll_timeout_ms() const;
    // When `c` is dropped for taking too long (handshake_s), or 0 when it is not at risk.
    double expiry_s(const conn& c) const;
    void expire_slow();
    void accept_all();
    bool read_conn(conn& c);
    void handle_frame(conn& c, std::string_view body);
    void handle_hello(conn& c, frame_reader& r);
    void handle_request(conn& c, wire_op op, frame_reader& r);
    void serve_waiters();
    void reply(conn& c, wire_reply code, std::string_view payload, bool close = false);
    void flush(conn& c);
    void drop(conn& c);
    conn* find_conn(uint64_t id);
    // The first key in `keys` that is missing, or nullptr. Caller holds mu_.
    const std::string* first_missing(const std::vector<std::string>& keys) const;
    std::string never_registered_locked() const;
    std::string timeout_detail(const std::string& key);

    int listen_fd_;
    int wake_fd_;  // eventfd: a local set() or the destructor wakes the poll loop
    std::string where_;
    identity me_;
    std::string key_;              // the job's secret
    std::vector<conn> conns_;      // server thread only
    std::vector<waiter> waiters_;  // server thread only
    uint64_t next_conn_id_ = 1;    // server thread only
    std::thread thread_;
    bool stop_ = false;  // guarded by mu_

    mutable std::mutex mu_;
    std::condition_variable cv_;  // a key arrived or a rank registered or left
    std::map<std::string, std::string, std::less<>> kv_;
    std::vector<rank_state> ranks_;
};

}  // namespace loom::bootstrap::detail
