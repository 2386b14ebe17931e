// SPDX-License-Identifier: Apache-2.0
// drivers/tcp where its behaviour is its own (the endpoint contract every driver keeps is
// tests/drivers/test_driver_contract.cc): what capabilities() says, and failure behaviour
// with real processes and sockets: a peer killed with SIGKILL (every operation toward it
// completes with PEER_FAILURE within the deadline, and the message names it), connects that
// time out naming the rank (never published, published
// but dead, never connected), and handshakes that name a wrong or duplicate rank or come
// from another job; and cancel (driver.hh): withdrawn sends are
// delivered whole or not at all, withdrawn receives drain, and the stream stays in step.
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/net.hh"
#include "tcp_test_util.hh"
#include "test_case.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

// Rank 1 receives a 64 MiB message slowly and publishes its pid; rank 0 kills it with SIGKILL
// in the middle of that transfer, with a receive and a second (never received) 64 MiB send
// also pending toward it.
int killed_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<uint8_t> big(size_t{64} << 20), big2(size_t{64} << 20);
    test::tally t(8);
    if (rank == 1) {
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 10, 0, big.data(), big.size(), 0) == 0, "recv");
        RANK_CHECK(rank, store.set("pid", std::to_string(::getpid())).is_ok(), "pid");
        deadline until(20);
        while (!until.expired()) {  // a slow reader: one poll (<= 4 MiB) every 10 ms
            t.poll(f, 8);
            ::usleep(10000);
        }
        return 1;  // should have been killed
    }
    auto pid = store.get("pid", 20);
    RANK_CHECK(rank, pid.is_ok(), "no pid");
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 1, 0, big2.data(), 8, 0) == 0, "recv");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 10, 0, big.data(), big.size(), 1) == 0, "send");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 11, 0, big2.data(), big2.size(), 2) == 0, "send");
    test::poll_for(f, 0.05, [&](const completion& c) { t.add(c); });  // the stream starts
    RANK_CHECK(rank, t.done == 0, "%zu operations completed before the kill", t.done);
    ::kill(pid_t(std::stol(*pid)), SIGKILL);
    double t0 = now_s();
    RANK_CHECK(rank, t.wait(f, 3, 10), "only %zu of 3 operations completed", t.done);
    double elapsed = now_s() - t0;
    for (int i = 0; i < 3; ++i) {
        RANK_CHECK(rank,
                   t.status[size_t(i)] == LOOM_ERR_PEER_FAILURE && t.last[size_t(i)].peer == 1,
                   "cookie %d: status %d", i, t.status[size_t(i)]);
    }
    RANK_CHECK(rank, elapsed < 2.0, "peer failure took %.3f s", elapsed);
    const status& why = test::tcp_of(**ep)->peer_status(1);
    RANK_CHECK(rank, why.code() == LOOM_ERR_PEER_FAILURE, "peer_status %d", why.code());
    RANK_CHECK(rank, why.message().find("rank 0: peer 1 ") != std::string::npos,
               "message does not name the peer: %s", why.message().c_str());
    std::printf("# rank 0: %s (after %.1f ms)\n", why.message().c_str(), elapsed * 1e3);
    // New operations toward the dead peer fail at once.
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 12, 0, big.data(), 8, 3) == 0, "send");
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 13, 0, big.data(), 8, 4) == 0, "recv");
    RANK_CHECK(rank, t.wait(f, 5, 1), "late operations did not complete");
    RANK_CHECK(rank, t.status[3] == LOOM_ERR_PEER_FAILURE && t.status[4] == LOOM_ERR_PEER_FAILURE,
               "late operations: %d %d", t.status[3], t.status[4]);
    return 0;
}

/// Connects one rank of `size` alone and returns its error (which must be a failure).
status lonely_connect(int rank, int size, file_store& store, double timeout_s) {
    auto ep = test::open_tcp(rank, size, test::unique_job("lonely"), &store, timeout_s);
    return ep.is_ok() ? status::ok() : ep.error();
}

void assert_names(const status& st, loom_status_t code, const char* needle) {
    if (st.code() != code || st.message().find(needle) == std::string::npos) {
        LOOM_FAIL("expected code " + std::to_string(code) + " naming '" + needle + "', got " +
                  st.to_string());
    }
    std::printf("# %s\n", st.message().c_str());
}

/// A raw client that sends `h` to the address rank `to` published; returns the reply kind.
int raw_hello(file_store& store, int to, drivers::tcp::hello h) {
    auto addr = store.get("tcp/" + std::to_string(to), 10);
    sockaddr_in sa{};
    if (!addr || !drivers::tcp::parse_address(*addr, &sa)) {
        return -1;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        ::close(fd);
        return -1;
    }
    drivers::tcp::hello wire = drivers::tcp::to_wire(h), reply{};
    ssize_t sent             = ::send(fd, &wire, sizeof wire, MSG_NOSIGNAL);
    ssize_t got              = ::recv(fd, &reply, sizeof reply, MSG_WAITALL);
    ::close(fd);
    return sent == ssize_t(sizeof wire) && got == ssize_t(sizeof reply)
               ? int(drivers::tcp::from_wire(reply).kind)
               : -1;
}

drivers::tcp::hello hello_from(int from, int to, int size, const std::string& job) {
    drivers::tcp::hello h{};
    h.magic       = drivers::tcp::hello_magic;
    h.version     = drivers::tcp::hello_version;
    h.from_rank   = from;
    h.to_rank     = to;
    h.size        = size;
    h.eager_limit = 65536;
    h.send_queue  = 1024;
    h.job_hash    = drivers::tcp::job_hash(job);
    return h;
}

/// Rank `rank` of `size` connects (job `job`) while a forked `client` plays the other side;
/// the client gets 5 s to finish after the connect returns.
status connect_against(int rank, int size, const std::string& job, file_store& store,
                       const std::function<void()>& client) {
    std::fflush(stdout);
    pid_t pid = ::fork();
    if (pid == 0) {
        client();
        ::_exit(0);
    }
    auto ep = test::open_tcp(rank, size, job, &store, 5);
    deadline until(5);
    while (::waitpid(pid, nullptr, WNOHANG) == 0) {
        if (until.expired()) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            break;
        }
        ::usleep(1000);
    }
    return ep.is_ok() ? status::ok() : ep.error();
}

// ---- cancel ----

/// Polls (into `t`) until every cookie in `want` completed or `timeout_s` passes.
bool wait_cookies(const drivers::fast_path& f, test::tally& t, std::initializer_list<size_t> want,
                  double timeout_s) {
    deadline until(timeout_s);
    test::backoff idle;
    for (;;) {
        bool all = true;
        for (size_t w : want) {
            all = all && t.count[w] > 0;
        }
        if (all) {
            return true;
        }
        if (until.expired()) {
            return false;
        }
        t.poll(f, 16) > 0 ? idle.reset() : idle.idle();
    }
}

// Small socket buffers (LOOM_TCP_SOCKBUF) keep a 4 MiB message on the wire for many polls.
constexpr size_t cancel_big = size_t{4} << 20, cancel_small = 1000;
constexpr size_t later_big = 300 * 1024, later_small = 100;
constexpr int n_cancel_rounds = 4;
// Round k: rank 0 cancels after polling this long; in round 0 rank 1 reads nothing until
// then (the 4 MiB send waits for its CTS), in the others it reads slowly all along (the send
// is partly written, the small one behind it may not have started).
constexpr double cancel_after_s[n_cancel_rounds] = {0, 0.001, 0.005, 0.02};

// Rank 0 posts a 4 MiB (rendezvous) and a 1000-byte send, cancels both, overwrites and frees
// their buffers, then sends two more messages of other tags. Rank 1 receives each cancelled
// message whole or not at all, and the later ones intact. Cookies: 4 k + {big, small, later
// big, later small}.
int cancel_send_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    test::tally t(4 * n_cancel_rounds);
    for (int k = 0; k < n_cancel_rounds; ++k) {
        uint64_t tag   = 100 * uint64_t(k + 1);
        size_t c0      = size_t(4 * k);
        std::string ks = std::to_string(k);
        if (rank == 0) {
            RANK_CHECK(rank, store.get("ready/" + ks, 20).is_ok(), "round %d: rank 1 not ready", k);
            std::vector<uint8_t> big(cancel_big), small(cancel_small);
            std::vector<uint8_t> lbig(later_big), lsmall(later_small);
            test::fill(big.data(), big.size(), tag + 1);
            test::fill(small.data(), small.size(), tag + 2);
            test::fill(lbig.data(), lbig.size(), tag + 3);
            test::fill(lsmall.data(), lsmall.size(), tag + 4);
            RANK_CHECK(rank, f.post_send(f.ctx, 1, tag + 1, 0, big.data(), big.size(), c0) == 0,
                       "send");
            test::poll_for(f, cancel_after_s[k], [&](const completion& c) { t.add(c); });
            RANK_CHECK(rank,
                       f.post_send(f.ctx, 1, tag + 2, 0, small.data(), small.size(), c0 + 1) == 0,
                       "send");
            bool c_big   = f.cancel(f.ctx, c0);
            bool c_small = f.cancel(f.ctx, c0 + 1);
            // A send that was not withdrawn had completed; its completion waits in poll.
            test::fill(big.data(), big.size(), tag + 50);
            test::fill(small.data(), small.size(), tag + 51);
            std::vector<uint8_t>().swap(big);  // 4 MiB: unmapped, a late read would fault
            std::vector<uint8_t>().swap(small);
            RANK_CHECK(rank, !f.cancel(f.ctx, c0) && !f.cancel(f.ctx, c0 + 1),
                       "a second cancel found something");
            RANK_CHECK(rank, !f.cancel(f.ctx, 12345), "cancel of an unknown cookie");
            RANK_CHECK(rank,
                       store
                           .set("cancelled/" + ks,
                                std::to_string(int(c_big)) + " " + std::to_string(int(c_small)))
                           .is_ok(),
                       "set");
            RANK_CHECK(rank,
                       f.post_send(f.ctx, 1, tag + 3, 0, lbig.data(), lbig.size(), c0 + 2) == 0,
                       "send");
            RANK_CHECK(rank,
                       f.post_send(f.ctx, 1, tag + 4, 0, lsmall.data(), lsmall.size(), c0 + 3) == 0,
                       "send");
            RANK_CHECK(rank, t.poll_until(f, store, "checked/" + ks, 30),
                       "round %d: rank 1 never checked", k);
            RANK_CHECK(rank, wait_cookies(f, t, {c0 + 2, c0 + 3}, 10), "round %d: later sends", k);
            RANK_CHECK(rank, t.status[c0 + 2] == 0 && t.status[c0 + 3] == 0,
                       "round %d: later sends: %d %d", k, t.status[c0 + 2], t.status[c0 + 3]);
            RANK_CHECK(rank, t.count[c0] == (c_big ? 0 : 1) && t.count[c0 + 1] == (c_small ? 0 : 1),
                       "round %d: cancelled %d %d, completions %d %d", k, c_big, c_small,
                       t.count[c0], t.count[c0 + 1]);
            continue;
        }
        std::vector<uint8_t> big(cancel_big, 0xee), small(cancel_small, 0xee);
        std::vector<uint8_t> lbig(later_big, 0xee), lsmall(later_small, 0xee);
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, tag + 1, 0, big.data(), big.size(), c0) == 0,
                   "recv");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, tag + 2, 0, small.data(), small.size(), c0 + 1) == 0,
                   "recv");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, tag + 3, 0, lbig.data(), lbig.size(), c0 + 2) == 0,
                   "recv");
        RANK_CHECK(rank,
                   f.post_recv(f.ctx, 0, tag + 4, 0, lsmall.data(), lsmall.size(), c0 + 3) == 0,
                   "recv");
        RANK_CHECK(rank, store.set("ready/" + ks, "1").is_ok(), "set");
        if (k == 0) {
            RANK_CHECK(rank, store.get("cancelled/" + ks, 20).is_ok(), "not cancelled");
        } else {
            // A slow reader: one poll, then a pause, until rank 0 has cancelled.
            deadline until(20);
            while (!store.get("cancelled/" + ks, 0).is_ok()) {
                RANK_CHECK(rank, !until.expired(), "round %d: not cancelled", k);
                t.poll(f, 16);
                ::usleep(500);
            }
        }
        RANK_CHECK(rank, wait_cookies(f, t, {c0 + 2, c0 + 3}, 20),
                   "round %d: the later messages did not arrive", k);
        test::poll_for(f, 0.2, [&](const completion& c) { t.add(c); });
        for (size_t j = 0; j < 4; ++j) {
            RANK_CHECK(rank, t.count[c0 + j] == 0 || t.status[c0 + j] == 0,
                       "round %d: message %zu: status %d", k, j, t.status[c0 + j]);
        }
        long bad_lbig   = test::check(lbig.data(), lbig.size(), tag + 3);
        long bad_lsmall = test::check(lsmall.data(), lsmall.size(), tag + 4);
        RANK_CHECK(rank, bad_lbig < 0 && bad_lsmall < 0,
                   "round %d: later messages differ at %ld, %ld", k, bad_lbig, bad_lsmall);
        // Whole (the sender's bytes, never the ones written after its cancel) or nothing.
        bool got_big = t.count[c0] > 0, got_small = t.count[c0 + 1] > 0;
        long bad_big   = got_big ? test::check(big.data(), big.size(), tag + 1) : -1;
        long bad_small = got_small ? test::check(small.data(), small.size(), tag + 2) : -1;
        RANK_CHECK(rank, bad_big < 0 && bad_small < 0,
                   "round %d: cancelled messages differ at %ld, %ld", k, bad_big, bad_small);
        RANK_CHECK(rank, got_big || f.cancel(f.ctx, c0), "round %d: big receive not pending", k);
        RANK_CHECK(rank, got_small || f.cancel(f.ctx, c0 + 1), "round %d: small receive", k);
        std::printf("# round %d: rank 0 withdrew big %s, small %s; rank 1 got big %s, small %s\n",
                    k, store.get("cancelled/" + ks, 0)->substr(0, 1) == "1" ? "yes" : "no",
                    store.get("cancelled/" + ks, 0)->substr(2, 1) == "1" ? "yes" : "no",
                    got_big ? "whole" : "nothing", got_small ? "whole" : "nothing");
        RANK_CHECK(rank, store.set("checked/" + ks, "1").is_ok(), "set");
    }
    RANK_CHECK(rank, t.finish(f, store, rank), "peer not done");
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    return 0;
}

// Rank 1 posts five receives; it cancels one whose CTS went out while rank 0 holds the data
// back, one whose 4 MiB payload is streaming in, and one nothing was sent for, and refills
// the cancelled buffers: they stay as refilled, and the later messages arrive intact.
// Cookies: 0 = 200 KiB (CTS out), 1 = 4 MiB (mid-stream), 2 = 300 KiB, 3 = 1000 B, 4 = never.
int cancel_recv_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    test::tally t(8);
    const size_t lens[] = {200 * 1024, cancel_big, later_big, cancel_small, 64};
    std::vector<std::vector<uint8_t>> buf(5);
    for (size_t i = 0; i < 5; ++i) {
        buf[i].assign(lens[i], 0xee);
    }
    if (rank == 0) {
        for (size_t i = 0; i < 4; ++i) {
            test::fill(buf[i].data(), lens[i], 10 + i);
        }
        // The own rank's loopback route withdraws too.
        uint8_t self_buf[8];
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 99, 0, self_buf, 8, 7) == 0, "self recv");
        RANK_CHECK(rank, f.cancel(f.ctx, 7) && !f.cancel(f.ctx, 7), "self cancel");
        RANK_CHECK(rank, store.get("posted", 20).is_ok(), "rank 1 never posted");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 10, 0, buf[0].data(), lens[0], 0) == 0, "send");
        // The RTS went out in post_send (an empty ring is flushed at once).
        RANK_CHECK(rank, store.set("rts_sent", "1").is_ok(), "set");
        RANK_CHECK(rank, store.get("cancelled0", 20).is_ok(), "rank 1 never cancelled");
        for (size_t i = 1; i < 4; ++i) {
            RANK_CHECK(rank, f.post_send(f.ctx, 1, 10 + i, 0, buf[i].data(), lens[i], i) == 0,
                       "send %zu", i);
        }
        // The receiver drains what it cancelled: every send completes normally.
        RANK_CHECK(rank, t.wait(f, 4, 30), "%zu of 4 sends completed", t.done);
        for (size_t i = 0; i < 4; ++i) {
            RANK_CHECK(rank, t.status[i] == 0, "send %zu: status %d", i, t.status[i]);
        }
    } else {
        for (size_t i = 0; i < 5; ++i) {
            RANK_CHECK(rank, f.post_recv(f.ctx, 0, 10 + i, 0, buf[i].data(), lens[i], i) == 0,
                       "recv %zu", i);
        }
        RANK_CHECK(rank, store.set("posted", "1").is_ok(), "set");
        // The RTS arrives and the CTS goes out; rank 0 sends no data until told.
        RANK_CHECK(rank, t.poll_until(f, store, "rts_sent", 20), "no RTS");
        test::poll_for(f, 0.02, [&](const completion& c) { t.add(c); });
        RANK_CHECK(rank, f.cancel(f.ctx, 0), "cancel after the CTS");
        test::fill(buf[0].data(), lens[0], 900);
        RANK_CHECK(rank, store.set("cancelled0", "1").is_ok(), "set");
        // Read slowly until the 4 MiB payload has begun to land, then cancel it.
        deadline until(20);
        while (test::check(buf[1].data(), 64, 11) >= 0) {
            RANK_CHECK(rank, !until.expired(), "the 4 MiB message never began");
            t.poll(f, 16);
            ::usleep(200);
        }
        RANK_CHECK(rank, t.count[1] == 0, "the 4 MiB message completed at once");
        RANK_CHECK(rank, f.cancel(f.ctx, 1), "cancel mid-stream");
        test::fill(buf[1].data(), lens[1], 901);
        RANK_CHECK(rank, !f.cancel(f.ctx, 1), "second cancel mid-stream");
        RANK_CHECK(rank, f.cancel(f.ctx, 4) && !f.cancel(f.ctx, 4), "cancel of a posted receive");
        test::fill(buf[4].data(), lens[4], 904);
        RANK_CHECK(rank, !f.cancel(f.ctx, 12345), "cancel of an unknown cookie");
        RANK_CHECK(rank, wait_cookies(f, t, {2, 3}, 20), "later messages did not arrive");
        test::poll_for(f, 0.1, [&](const completion& c) { t.add(c); });
        for (size_t i = 2; i < 4; ++i) {
            long bad = test::check(buf[i].data(), lens[i], 10 + i);
            RANK_CHECK(rank, t.status[i] == 0 && bad < 0, "message %zu: status %d byte %ld", i,
                       t.status[i], bad);
        }
        const size_t cancelled[] = {0, 1, 4};
        for (size_t i : cancelled) {
            long bad = test::check(buf[i].data(), lens[i], 900 + i);
            RANK_CHECK(rank, t.count[i] == 0 && bad < 0,
                       "cancelled receive %zu: %d completions, written at byte %ld", i, t.count[i],
                       bad);
        }
    }
    RANK_CHECK(rank, t.finish(f, store, rank), "peer not done");
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    return 0;
}

void with_small_sockbufs(const char* label,
                         int (*body)(int, const std::string&, const std::string&),
                         const char* eager_limit = "65536") {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_TCP_SOCKBUF", "65536").is_ok());
    assert_true(reg.set("LOOM_TCP_EAGER_LIMIT", eager_limit).is_ok());
    std::string why = test::run_job(label, 2, 60, body);
    assert_true(reg.set("LOOM_TCP_SOCKBUF", "0").is_ok());
    assert_true(reg.set("LOOM_TCP_EAGER_LIMIT", "65536").is_ok());
    EXPECT_PASSED(why);
}

}  // namespace

static void capabilities_describe_tcp(void**) {
    drivers::endpoint_config cfg;
    auto ep = drivers::open_tcp(cfg);
    assert_true(ep.is_ok());
    drivers::caps c = (*ep)->capabilities();
    assert_string_equal(c.name, "tcp");
    assert_true(c.single_copy && c.detects_peer_death);
    assert_int_equal(c.eager_limit, 65536);
    assert_true((*ep)->connect().is_ok());  // one rank: nothing to connect
}

static void killed_peer_fails_every_operation(void**) {
    std::string why = test::run_job("killed", 2, 40, killed_rank);
    if (why != "rank 1 killed by signal 9; ") {
        LOOM_FAIL("expected only rank 1 to die: " + why);
    }
}

static void connect_times_out_naming_the_rank(void**) {
    test::store_dir dir("lonely");
    file_store store(dir.path);
    double t0 = now_s();
    // Rank 1 never publishes its address.
    assert_names(lonely_connect(0, 2, store, 1.0), LOOM_ERR_TIMEOUT, "rank 1 did not publish");
    assert_true(now_s() - t0 < 3.0);
    // Rank 2 published an address where nobody listens any more (a dead run's).
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len      = sizeof sa;
    assert_int_equal(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    assert_int_equal(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
    ::close(fd);
    test::store_dir dir2("lonely2");
    file_store store2(dir2.path);
    assert_true(store2.set("tcp/2", "127.0.0.1:" + std::to_string(ntohs(sa.sin_port))).is_ok());
    t0 = now_s();
    assert_names(lonely_connect(1, 3, store2, 1.0), LOOM_ERR_TIMEOUT, "connecting to rank 2");
    assert_true(now_s() - t0 < 3.0);
    // Rank 0 never connects to rank 1.
    test::store_dir dir3("lonely3");
    file_store store3(dir3.path);
    assert_names(lonely_connect(1, 2, store3, 1.0), LOOM_ERR_TIMEOUT,
                 "rank 0 never connected to this rank");
}

// The parts of a connect report that say where and what to look at (besides the rank).
void assert_reports(const status& st, const std::vector<std::string>& parts) {
    for (const auto& part : parts) {
        if (st.message().find(part) == std::string::npos) {
            LOOM_FAIL("the report lacks '" + part + "': " + st.to_string());
        }
    }
}

static void connect_reports_name_the_host_the_address_and_what_was_tried(void**) {
    std::string here = "rank 1 on host " + net::host_name() + ": ";
    // A closed port: rank 2 published an address where nobody listens.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len      = sizeof sa;
    assert_int_equal(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    assert_int_equal(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
    ::close(fd);
    std::string closed = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
    test::store_dir dir("report");
    file_store store(dir.path);
    assert_true(store.set("tcp/2", closed).is_ok());
    status st = lonely_connect(1, 3, store, 0.5);
    assert_reports(st, {here, "connecting to rank 2 at " + closed + " (tried ", " times",
                        "last error: Connection refused", "Check that those ranks run",
                        "reachable from " + net::host_name()});
    std::printf("# %s\n", st.message().c_str());
    // Nobody dials this rank: the report says which address the others were to dial.
    test::store_dir dir2("report2");
    file_store store2(dir2.path);
    st = lonely_connect(1, 2, store2, 0.5);
    assert_reports(st, {here, "rank 0 never connected to this rank (it dials 127.0.0.1:"});
    // No route to the published address: this rank runs in a fresh network namespace, with
    // only its loopback (brought up for its own listener).
    std::string why = test::run_ranks(1, 30, [](int) {
        if (::unshare(CLONE_NEWNET) != 0) {
            std::printf(
                "# no network namespace here (unshare: %s): the unreachable case is "
                "not run\n",
                std::strerror(errno));
            return 77;
        }
        int s = ::socket(AF_INET, SOCK_DGRAM, 0);
        ifreq ifr{};
        std::strcpy(ifr.ifr_name, "lo");
        ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
        ::ioctl(s, SIOCSIFFLAGS, &ifr);
        ::close(s);
        test::store_dir d("report3");
        file_store st3(d.path);
        (void)st3.set("tcp/2", "10.77.0.3:5000");
        status r = lonely_connect(1, 3, st3, 0.5);
        std::printf("# %s\n", r.message().c_str());
        for (const char* part : {"connecting to rank 2 at 10.77.0.3:5000 (tried ",
                                 "last error: Network is unreachable"}) {
            if (r.message().find(part) == std::string::npos) {
                std::printf("# the report lacks '%s'\n", part);
                return 1;
            }
        }
        return 0;
    });
    if (why != "" && why != "rank 0 exited 77; ") {
        LOOM_FAIL("no route: " + why);
    }
}

static void handshake_with_wrong_rank_is_an_error(void**) {
    test::store_dir dir("wrong");
    file_store store(dir.path);
    std::string job = test::unique_job("wrong");
    status st       = connect_against(1, 2, job, store, [&] {
        raw_hello(store, 1, hello_from(5, 1, 2, job));  // rank 5 of a 2-rank job
    });
    assert_names(st, LOOM_ERR_INVALID_ARGUMENT, "rank 5");
}

static void handshake_with_duplicate_rank_is_an_error(void**) {
    test::store_dir dir("dup");
    file_store store(dir.path);
    std::string job = test::unique_job("dup");
    // Rank 2 of 3 waits for ranks 0 and 1; two clients both claim rank 0.
    status st = connect_against(2, 3, job, store, [&] {
        int first = raw_hello(store, 2, hello_from(0, 2, 3, job));
        if (first == int(drivers::tcp::hello_kind::accept)) {
            raw_hello(store, 2, hello_from(0, 2, 3, job));
        }
    });
    assert_names(st, LOOM_ERR_INVALID_ARGUMENT, "duplicate rank 0");
}

static void another_jobs_connection_is_refused_not_fatal(void**) {
    test::store_dir dir("otherjob");
    file_store store(dir.path);
    std::string job = test::unique_job("otherjob");
    int refused[2];
    assert_int_equal(::pipe(refused), 0);
    status st = connect_against(1, 2, job, store, [&] {
        char kind = char(raw_hello(store, 1, hello_from(0, 1, 2, job + "-other")));
        (void)!::write(refused[1], &kind, 1);
        auto ep = test::open_tcp(0, 2, job, &store, 5);  // then the real rank 0
        char ok = ep.is_ok() ? 1 : 0;
        (void)!::write(refused[1], &ok, 1);
    });
    char kind = 0, ok = 0;
    assert_int_equal(::read(refused[0], &kind, 1), 1);
    assert_int_equal(::read(refused[0], &ok, 1), 1);
    ::close(refused[0]);
    ::close(refused[1]);
    assert_int_equal(kind, int(drivers::tcp::hello_kind::reject));
    if (!st.is_ok() || ok != 1) {
        LOOM_FAIL("the real rank did not connect after another job's: " + st.to_string());
    }
}

static void bad_parameters_are_errors(void**) {
    auto& reg = params::registry::global();
    drivers::endpoint_config cfg;
    struct bad_case {
        const char *name, *value, *restore, *named;
    };
    for (auto [name, value, restore, named] :
         {bad_case{"LOOM_TCP_ADDR", "not-an-address", "", "LOOM_TCP_ADDR='not-an-address'"},
          bad_case{"LOOM_TCP_IFACE", "no-such-if0", "", "LOOM_TCP_IFACE='no-such-if0'"},
          bad_case{"LOOM_TCP_SEND_QUEUE", "0", "1024", "LOOM_TCP_SEND_QUEUE=0"}}) {
        assert_true(reg.set(name, value).is_ok());
        auto ep = drivers::open_tcp(cfg);
        assert_names(ep.is_ok() ? status::ok() : ep.error(), LOOM_ERR_INVALID_ARGUMENT, named);
        assert_true(reg.set(name, restore).is_ok());
    }
    assert_true(reg.set("LOOM_TCP_IFACE", "lo").is_ok());  // lo has 127.0.0.1
    assert_true(drivers::open_tcp(cfg).is_ok());
    assert_true(reg.set("LOOM_TCP_IFACE", "").is_ok());
    test::use_loopback();
}

int main() {
    test::use_loopback();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capabilities_describe_tcp),
        cmocka_unit_test(killed_peer_fails_every_operation),
        cmocka_unit_test(connect_times_out_naming_the_rank),
        cmocka_unit_test(connect_reports_name_the_host_the_address_and_what_was_tried),
        cmocka_unit_test(handshake_with_wrong_rank_is_an_error),
        cmocka_unit_test(handshake_with_duplicate_rank_is_an_error),
        cmocka_unit_test(another_jobs_connection_is_refused_not_fatal),
        cmocka_unit_test(bad_parameters_are_errors),
        LOOM_CASE(cancelled_sends_arrive_whole_or_not_at_all,
                  with_small_sockbufs("cancel_send", cancel_send_rank)),
        // The same with every message eager (4 MiB limit): a partly written eager frame goes on
        // from a copy of its unsent bytes.
        LOOM_CASE(cancelled_eager_sends_arrive_whole_or_not_at_all,
                  with_small_sockbufs("cancel_eager", cancel_send_rank, "4194304")),
        LOOM_CASE(cancelled_receives_drain_and_stay_untouched,
                  with_small_sockbufs("cancel_recv", cancel_recv_rank)),
    };
    return LOOM_RUN_TESTS("drivers_tcp_failures", tests);
}
