// SPDX-License-Identifier: Apache-2.0
// The TCP rendezvous against outsiders and unlucky clients, over real sockets: a client
// without the job's secret, with a wrong one, or replaying a recorded hello is refused and
// learns neither the job's id nor its size nor any key; no secret at all is a clear error on
// every rank; half-sent and oversized frames and idle connections cannot grow rank 0 or hold
// it; rank 0 binds only the address it was given; destroying rank 0's store returns within
// the linger time while other ranks stay connected.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "base/clock.hh"
#include "base/secret.hh"
#include "bootstrap/bootstrap.hh"
#include "bootstrap/store_tcp.hh"
#include "proc.hh"
#include "test_main.hh"

using namespace loom;
namespace detail = loom::bootstrap::detail;

namespace {

const std::string secret_hex(64, '7');
const std::string job_name = "secret-job-name";

bootstrap::identity rank_of(int rank, int size, const std::string& secret = secret_hex) {
    bootstrap::identity me;
    me.rank      = rank;
    me.size      = size;
    me.job       = job_name;
    me.secret    = secret;
    me.timeout_s = 5;
    return me;
}

int raw_connect(int port) {
    auto addresses = net::resolve({"127.0.0.1", uint16_t(port)}, false);
    std::string why;
    return addresses ? net::connect_tcp(*addresses, deadline(3), 3, &why) : -1;
}

// One answer: its code and string, or code -1 when the connection closed or stayed silent.
struct answer {
    int code = -1;
    std::string text;
};

answer read_answer(int fd, double timeout_s = 3) {
    std::string body;
    answer a;
    if (detail::recv_frame(fd, &body, deadline(timeout_s)) != 0) {
        return a;
    }
    detail::frame_reader r(body);
    uint8_t code = 0;
    if (r.u8(&code) && r.str(&a.text)) {
        a.code = code;
    }
    return a;
}

void send_frame(int fd, const std::string& body) {
    uint32_t len = htole32(static_cast<uint32_t>(body.size()));
    std::string frame(reinterpret_cast<const char*>(&len), 4);
    frame += body;
    assert_int_equal(detail::send_all(fd, frame, deadline(3)), 0);
}

// A hello for `rank` answering `server_nonce` under `key` (raw bytes).
std::string hello_for(int rank, int size, const std::string& key, const std::string& server_nonce) {
    std::string client_nonce(detail::nonce_bytes, 'c');
    std::string fields = detail::hello_fields(rank, size, job_name, client_nonce);
    return fields + detail::frame_writer()
                        .str(detail::hello_tag(key, server_nonce, fields))
                        .finish()
                        .substr(4);
}

std::string raw_key(const std::string& hex) {
    std::string key;
    from_hex(hex, &key);
    return key;
}

// True when the peer closed `fd` within `timeout_s` (reads and discards what comes first).
bool closed_within(int fd, double timeout_s) {
    deadline until(timeout_s);
    char buf[256];
    while (net::wait_fd(fd, POLLIN, until) == 0) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            return true;
        }
    }
    return false;
}

long rss_kib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.starts_with("VmRSS:")) {
            return std::stol(line.substr(6));
        }
    }
    return -1;
}

void expect_nothing_revealed(const std::string& text) {
    for (const char* secret : {job_name.c_str(), "ranks", "never registered", "addr/"}) {
        if (text.find(secret) != std::string::npos) {
            LOOM_FAIL("an outsider learned '" + std::string(secret) + "': " + text);
        }
    }
}

}  // namespace

static void an_outsider_without_the_secret_is_refused_and_learns_nothing(void**) {
    int port   = test::free_port();
    auto store = bootstrap::connect_store("127.0.0.1:" + std::to_string(port), rank_of(0, 4), 5);
    assert_true(store.is_ok());
    assert_true((*store)->set("addr/0", "10.0.0.1:4000").is_ok());

    // A raw client: the challenge is a bare nonce; a request before hello is refused.
    int fd       = raw_connect(port);
    answer hello = read_answer(fd);
    assert_int_equal(hello.code, 0);
    assert_int_equal(hello.text.size(), detail::nonce_bytes);
    send_frame(fd, detail::frame_writer().u8(3).u32(100).str("addr/0").finish().substr(4));
    answer refused = read_answer(fd);
    assert_int_equal(refused.code, 1);
    expect_nothing_revealed(refused.text);
    assert_true(closed_within(fd, 2));
    close(fd);

    // A hello with a tag made without the secret (an all-zero key): refused, nothing said.
    fd                = raw_connect(port);
    std::string nonce = read_answer(fd).text;
    send_frame(fd, hello_for(3, 4, std::string(32, '\0'), nonce));
    refused = read_answer(fd);
    assert_int_equal(refused.code, 1);
    assert_non_null(std::strstr(refused.text.c_str(), "authentication failed"));
    expect_nothing_revealed(refused.text);
    assert_true(closed_within(fd, 2));
    close(fd);

    // The real client API with a wrong secret: a clear error, and rank 3 is still free.
    auto wrong = bootstrap::connect_store("127.0.0.1:" + std::to_string(port),
                                          rank_of(3, 4, std::string(64, '8')), 2);
    assert_false(wrong.is_ok());
    assert_int_equal(wrong.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(wrong.error().message().c_str(), "LOOM_JOB_SECRET"));
    expect_nothing_revealed(wrong.error().message());
    auto right = bootstrap::connect_store("127.0.0.1:" + std::to_string(port), rank_of(3, 4), 2);
    assert_true(right.is_ok());
    assert_string_equal((*right)->get("addr/0", 1)->c_str(), "10.0.0.1:4000");
    // A key once written stays: neither rank 3 nor anyone else rewrites rank 0's address.
    assert_int_equal((*right)->set("addr/0", "6.6.6.6:1").code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_string_equal((*store)->get("addr/0", 1)->c_str(), "10.0.0.1:4000");
}

static void a_replayed_hello_is_refused(void**) {
    int port   = test::free_port();
    auto store = bootstrap::connect_store("127.0.0.1:" + std::to_string(port), rank_of(0, 3), 5);
    assert_true(store.is_ok());
    std::string key = raw_key(secret_hex);
    // A hello recorded on one connection (valid for its nonce) ...
    int first            = raw_connect(port);
    std::string recorded = hello_for(2, 3, key, read_answer(first).text);
    // ... replayed on another: refused.
    int second = raw_connect(port);
    (void)read_answer(second);
    send_frame(second, recorded);
    answer replay = read_answer(second);
    assert_int_equal(replay.code, 1);
    assert_non_null(std::strstr(replay.text.c_str(), "authentication failed"));
    close(second);
    // On the connection it was made for, it is good (so the refusal was the replay's).
    send_frame(first, recorded);
    answer ok = read_answer(first);
    assert_int_equal(ok.code, 0);
    assert_int_equal(ok.text.size(), 32u);  // rank 0's proof
    close(first);
}

static void no_secret_is_a_clear_error_on_every_rank(void**) {
    std::string where = "127.0.0.1:" + std::to_string(test::free_port());
    for (int rank : {0, 1}) {
        auto s = bootstrap::connect_store(where, rank_of(rank, 2, ""), 1);
        assert_false(s.is_ok());
        assert_int_equal(s.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        const std::string& msg = s.error().message();
        assert_non_null(std::strstr(msg.c_str(), "needs LOOM_JOB_SECRET"));
        assert_non_null(std::strstr(msg.c_str(), "openssl rand -hex 32"));
    }
    auto bad = bootstrap::connect_store(where, rank_of(0, 2, "xyz"), 1);
    assert_false(bad.is_ok());
    assert_non_null(std::strstr(bad.error().message().c_str(), "64 hex digits"));
}

static void half_sent_frames_and_idle_connections_are_bounded(void**) {
    int port     = test::free_port();
    auto me      = rank_of(0, 2);
    me.timeout_s = 1;  // the handshake allowance is min(5 s, timeout)
    auto store   = bootstrap::connect_store("127.0.0.1:" + std::to_string(port), me, 1);
    assert_true(store.is_ok());
    long before = rss_kib();
    // 24 clients announce 16 MiB frames and send 1 MiB of them; 40 more just sit there.
    std::vector<int> fds;
    std::string chunk(1 << 20, 'x');
    for (int k = 0; k < 24; ++k) {
        int fd = raw_connect(port);
        fds.push_back(fd);
        uint32_t len = htole32(16u << 20);
        std::string start(reinterpret_cast<const char*>(&len), 4);
        (void)!send(fd, start.data(), start.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)!send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    for (int k = 0; k < 40; ++k) {
        fds.push_back(raw_connect(port));
    }
    double t0  = now_s();
    int closed = 0;
    for (int fd : fds) {
        closed += closed_within(fd, 3) ? 1 : 0;
        close(fd);
    }
    long grown_kib = rss_kib() - before;
    std::printf(
        "# 24 half-sent 16 MiB frames + 40 idle connections: %d closed in %.1f s, rank 0 "
        "grew by %ld KiB\n",
        closed, now_s() - t0, grown_kib);
    if (closed != static_cast<int>(fds.size()) || grown_kib > 8 * 1024) {
        LOOM_FAIL("closed " + std::to_string(closed) + " of " + std::to_string(fds.size()) +
                  " connections in " + std::to_string(now_s() - t0) + " s; rank 0 grew by " +
                  std::to_string(grown_kib) + " KiB");
    }
    // A real rank still gets in afterwards.
    auto rank1 = bootstrap::connect_store("127.0.0.1:" + std::to_string(port), rank_of(1, 2), 2);
    assert_true(rank1.is_ok());
}

static void rank_0_listens_only_where_it_is_told(void**) {
    // 192.0.2.1 (TEST-NET-1) is no address of this host: no silent fallback to 0.0.0.0.
    int port = test::free_port();
    auto s   = bootstrap::connect_store("192.0.2.1:" + std::to_string(port), rank_of(0, 2), 1);
    assert_false(s.is_ok());
    assert_non_null(std::strstr(s.error().message().c_str(), "LOOM_BOOTSTRAP_LISTEN"));
    // Told so, it listens on the address given (loopback here) and a rank reaches it there.
    auto me   = rank_of(0, 2);
    me.listen = "127.0.0.1";
    auto root = bootstrap::connect_store("192.0.2.1:" + std::to_string(port), me, 1);
    assert_true(root.is_ok());
    auto rank1 = bootstrap::connect_store("127.0.0.1:" + std::to_string(port), rank_of(1, 2), 2);
    assert_true(rank1.is_ok());
}

static void rank_0_destroys_its_store_within_the_linger_time(void**) {
    std::string where = "127.0.0.1:" + std::to_string(test::free_port());
    auto out          = test::run_ranks(
                 2,
                 [&](int rank, std::string* report) {
            auto me     = rank_of(rank, 2);
            me.linger_s = 0.5;
            auto store  = bootstrap::connect_store(where, me, 20);
            if (!store) {
                *report = store.error().to_string();
                return 1;
            }
            if (rank == 1) {  // stays connected well past rank 0's destroy
                (void)(*store)->set("here", "1");
                std::this_thread::sleep_for(std::chrono::seconds(4));
                return 0;
            }
            if (!(*store)->get("here", 10)) {
                return 3;
            }
            double t0 = now_s();
            store->reset();
            double took = now_s() - t0;
            *report     = "destroy took " + std::to_string(took) + " s";
            return took < 1.5 ? 0 : 2;
        },
                 30);
    for (const auto& o : out) {
        if (o.code != 0) {
            LOOM_FAIL("code " + std::to_string(o.code) + ": " + o.text);
        }
    }
}

LOOM_TEST_MAIN("bootstrap_store_tcp_auth",
               cmocka_unit_test(an_outsider_without_the_secret_is_refused_and_learns_nothing),
               cmocka_unit_test(a_replayed_hello_is_refused),
               cmocka_unit_test(no_secret_is_a_clear_error_on_every_rank),
               cmocka_unit_test(half_sent_frames_and_idle_connections_are_bounded),
               cmocka_unit_test(rank_0_listens_only_where_it_is_told),
               cmocka_unit_test(rank_0_destroys_its_store_within_the_linger_time))
