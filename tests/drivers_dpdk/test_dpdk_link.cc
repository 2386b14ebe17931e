// SPDX-License-Identifier: Apache-2.0
// The dpdk frame link (drivers/dpdk/dpdk_link.hh) over a memif pair between two processes:
// this one (the memif server, checked with cmocka) and a child forked before either touches
// DPDK (the client, reporting by exit status). Each case runs in a process of its own
// (dpdk_test_util.hh says why):
//   every_size_both_ways_whole_and_in_order   frames of every size from 1 to the MTU, both
//                                             ways at once, each intact and in order
//   burst_past_the_rings_drops_and_counts     5000 frames into a peer that does not read:
//                                             the tx ring fills, the rest is dropped and
//                                             counted, send() never blocks, and what was
//                                             counted sent arrives
//   bad_frames_are_dropped_and_counted        another EtherType, runts and frames over the
//                                             MTU, sent raw by the peer: dropped, each by
//                                             its cause, the good ones around them kept
//   peer_exit_turns_alive_false               the peer process exits: alive() goes false
//                                             within LOOM_DPDK_DOWN_GRACE and a margin
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "dpdk_test_util.hh"
#include "drivers/datagram.hh"
#include "drivers/dpdk/dpdk_frame.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "test_case.hh"
#include "value_or_fail.hh"

using namespace loom;
using namespace loom::drivers::dpdk;
using loom::test::dpdk::channel;

namespace {

constexpr double open_timeout_s = 10;

result<std::unique_ptr<eth_link>> open_memif(const std::string& socket, bool server) {
    port_config c;
    c.device      = memif_vdev(server ? "net_memif_server" : "net_memif_client", socket, server, 0);
    c.retry_start = !server;
    c.link_timeout_s = open_timeout_s;
    auto p           = port::open(c);
    if (!p) {
        return p.error();
    }
    return std::make_unique<eth_link>(std::move(*p));
}

/// The child's side: open, or exit 10 (saying why on stderr).
std::unique_ptr<eth_link> child_open(const std::string& socket) {
    auto l = open_memif(socket, false);
    if (!l) {
        std::fprintf(stderr, "# child: %s\n", l.error().to_string().c_str());
        ::_exit(10);
    }
    return std::move(*l);
}

int wait_child(pid_t pid, double timeout_s) {
    deadline until(timeout_s);
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
        if (until.expired()) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            return -1;
        }
        ::usleep(1000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Frame of size s: byte k is s × 7 + k × 13, so a frame of the wrong size or a mixed-up
// byte shows.
void fill(uint8_t* p, size_t s) {
    for (size_t k = 0; k < s; ++k) {
        p[k] = uint8_t(s * 7 + k * 13);
    }
}
bool intact(const uint8_t* p, size_t len, size_t s) {
    if (len != s) {
        return false;
    }
    for (size_t k = 0; k < s; ++k) {
        if (p[k] != uint8_t(s * 7 + k * 13)) {
            return false;
        }
    }
    return true;
}

/// Sends one frame (head: its first 8 bytes, body: the rest) and hands it to the port; false
/// when the pool or the tx ring had no room (nothing went: send it again).
bool send_now(eth_link& l, const uint8_t* p, size_t s) {
    uint64_t full = l.stats().drop_tx_full;
    size_t h      = s < 8 ? s : 8;
    if (!l.send(p, h, p + h, s - h)) {
        return false;
    }
    l.flush();
    return l.stats().drop_tx_full == full;
}

// Both sides: send sizes 1 … mtu, receive the peer's 1 … mtu in order. 0, or where it failed.
int exchange_every_size(eth_link& l, double timeout_s) {
    size_t mtu = l.mtu();
    std::vector<uint8_t> buf(mtu);
    size_t next_out = 1, next_in = 1;
    deadline until(timeout_s);
    drivers::common::frame_view got[burst_size];
    while (next_out <= mtu || next_in <= mtu) {
        bool busy = false;
        if (next_out <= mtu) {
            fill(buf.data(), next_out);
            if (send_now(l, buf.data(), next_out)) {
                ++next_out;
                busy = true;
            }
        }
        int n = l.recv(got, burst_size);
        for (int i = 0; i < n; ++i) {
            if (next_in > mtu || !intact(got[i].data, got[i].len, next_in)) {
                std::fprintf(stderr, "# frame %zu: %zu bytes, not intact\n", next_in, got[i].len);
                return 2;
            }
            ++next_in;
            busy = true;
        }
        if (until.expired()) {
            std::fprintf(stderr, "# timed out: sent %zu, received %zu of %zu\n", next_out - 1,
                         next_in - 1, mtu);
            return 3;
        }
        if (!busy) {
            sched_yield();
        }
    }
    return 0;
}

void every_size_both_ways_whole_and_in_order(void**) {
    std::string socket = test::dpdk::unique_socket("link-sizes");
    channel done;
    pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        auto l = child_open(socket);
        int rc = exchange_every_size(*l, 60);
        (void)done.get(30, 0);  // stay until the parent has everything
        ::_exit(rc);
    }
    auto l = test::value_or_fail(open_memif(socket, true));
    assert_true(l->mtu() >= drivers::datagram_max_frame);
    assert_int_equal(exchange_every_size(*l, 60), 0);
    done.put(1);
    assert_int_equal(wait_child(pid, 30), 0);
    size_t mtu = l->mtu();
    assert_int_equal(l->stats().frames_in, mtu);
    assert_int_equal(l->stats().bytes_in, mtu * (mtu + 1) / 2);
    assert_int_equal(l->stats().drop_wrong_type + l->stats().drop_runt + l->stats().drop_too_long,
                     0);
    std::printf("# %zu frames of 1..%zu bytes each way over %s\n", mtu, mtu, l->describe().c_str());
}

void burst_past_the_rings_drops_and_counts(void**) {
    std::string socket = test::dpdk::unique_socket("link-burst");
    channel sent, go;
    constexpr int burst   = 5000;
    constexpr size_t size = 8000;
    pid_t pid             = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        auto l = child_open(socket);
        (void)go.get(10, 0);  // the parent is up and does not read
        std::vector<uint8_t> buf(size);
        fill(buf.data(), size);
        double started = now_s();
        for (int i = 0; i < burst; ++i) {
            (void)l->send(buf.data(), size, nullptr, 0);
        }
        l->flush();
        double took   = now_s() - started;
        const auto& s = l->stats();
        sent.put(s.frames_out);
        std::fprintf(stderr,
                     "# child: %llu sent, %llu dropped (tx ring full), %llu (no mbuf), "
                     "in %.3f s\n",
                     (unsigned long long)s.frames_out, (unsigned long long)s.drop_tx_full,
                     (unsigned long long)s.drop_no_mbuf, took);
        int rc = s.frames_out + s.drop_tx_full + s.drop_no_mbuf != burst ? 2
                 : s.drop_tx_full == 0                                   ? 3
                 : took >= 2.0                                           ? 4
                                                                         : 0;
        (void)go.get(30, 0);  // until the parent has drained the ring
        ::_exit(rc);
    }
    auto l = test::value_or_fail(open_memif(socket, true));
    go.put(1);
    uint64_t child_sent = sent.get(20);
    assert_true(child_sent != ~uint64_t(0));
    assert_true(child_sent > 0 && child_sent < burst);
    drivers::common::frame_view got[burst_size];
    uint64_t received = 0;
    double last       = now_s();
    while (now_s() - last < 0.3) {
        int n = l->recv(got, burst_size);
        for (int i = 0; i < n; ++i) {
            assert_true(intact(got[i].data, got[i].len, size));
        }
        if (n > 0) {
            received += uint64_t(n);
            last = now_s();
        } else {
            sched_yield();
        }
    }
    go.put(1);
    assert_int_equal(wait_child(pid, 10), 0);
    assert_int_equal(received, child_sent);
    std::printf("# %d sent at once: %llu went (the ring's worth), the rest dropped and counted\n",
                burst, (unsigned long long)child_sent);
}

/// Hands `len` raw bytes to the port as one frame, bypassing the link's framing.
bool send_raw(eth_link& l, const uint8_t* bytes, size_t len) {
    rte_mbuf* m = rte_pktmbuf_alloc(l.device().pool());
    if (m == nullptr) {
        return false;
    }
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(len)));
    if (p == nullptr) {
        rte_pktmbuf_free(m);
        return false;
    }
    memcpy(p, bytes, len);
    if (rte_eth_tx_burst(l.device().id(), 0, &m, 1) != 1) {
        rte_pktmbuf_free(m);
        return false;
    }
    return true;
}

void bad_frames_are_dropped_and_counted(void**) {
    std::string socket = test::dpdk::unique_socket("link-bad");
    channel done;
    constexpr int each = 5;
    pid_t pid          = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        auto l     = child_open(socket);
        size_t mtu = l->mtu();
        std::vector<uint8_t> frame(eth_header + mtu + 1, 0x5a);
        rte_ether_addr bcast;
        memset(&bcast, 0xff, sizeof bcast);
        write_eth_header(frame.data(), bcast, l->device().mac());
        int rc = 0;
        for (int i = 0; i < each && rc == 0; ++i) {
            std::vector<uint8_t> ip(frame.begin(), frame.begin() + 100);
            ip[12] = 0x08, ip[13] = 0x00;  // IPv4
            if (!send_raw(*l, ip.data(), ip.size()) ||
                !send_raw(*l, frame.data(), 10) ||            // shorter than the header
                !send_raw(*l, frame.data(), frame.size())) {  // the MTU + 1 after it
                rc = 2;
            }
            uint8_t good[100];
            fill(good, sizeof good);
            if (rc == 0 && !send_now(*l, good, sizeof good)) {
                rc = 3;
            }
        }
        (void)done.get(30, 0);
        ::_exit(rc);
    }
    auto l = test::value_or_fail(open_memif(socket, true));
    drivers::common::frame_view got[burst_size];
    int good = 0;
    deadline until(10);
    while (good < each && !until.expired()) {
        int n = l->recv(got, burst_size);
        for (int i = 0; i < n; ++i) {
            assert_true(intact(got[i].data, got[i].len, 100));
        }
        good += n;
        if (n == 0) {
            sched_yield();
        }
    }
    done.put(1);
    assert_int_equal(wait_child(pid, 10), 0);
    assert_int_equal(good, each);
    const auto& s = l->stats();
    assert_int_equal(s.drop_wrong_type, each);
    assert_int_equal(s.drop_runt, each);
    assert_int_equal(s.drop_too_long, each);
    assert_int_equal(s.frames_in, each);
}

void peer_exit_turns_alive_false(void**) {
    std::string socket = test::dpdk::unique_socket("link-exit");
    pid_t pid          = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        auto l = child_open(socket);
        uint8_t hello[64];
        fill(hello, sizeof hello);
        ::_exit(send_now(*l, hello, sizeof hello) ? 0 : 2);  // as a crash would: no close
    }
    auto l = test::value_or_fail(open_memif(socket, true));
    drivers::common::frame_view got[burst_size];
    deadline until(10);
    int n = 0;
    while (n == 0 && !until.expired()) {
        n = l->recv(got, burst_size);
        sched_yield();
    }
    assert_int_equal(n, 1);
    assert_true(l->alive());
    assert_int_equal(wait_child(pid, 10), 0);
    double gone_at = now_s();
    while (l->alive() && now_s() - gone_at < 3.0) {
        (void)l->recv(got, burst_size);
        ::usleep(1000);
    }
    double took = now_s() - gone_at;
    assert_false(l->alive());
    std::printf("# alive() false %.3f s after the peer exited\n", took);
}

}  // namespace

LOOM_DPDK_TEST_MAIN("drivers_dpdk_link", cmocka_unit_test(every_size_both_ways_whole_and_in_order),
                    cmocka_unit_test(burst_past_the_rings_drops_and_counts),
                    cmocka_unit_test(bad_frames_are_dropped_and_counted),
                    cmocka_unit_test(peer_exit_turns_alive_false))
