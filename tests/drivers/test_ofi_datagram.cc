// SPDX-License-Identifier: Apache-2.0
// ofi's datagram endpoint ("ofi:", drivers/ofi/ofi_datagram.hh) between real processes, over
// udp (udp;ofi_rxd: udp's own datagrams stop at 1472 bytes) and tcp;ofi_rxm, and the
// exchange over net; over sockets (whose FI_EP_DGRAM carries a whole frame: the datagram
// path, which may lose frames) frames arriving whole and in order; a hello and a goodbye
// over sockets and shm too (in one process: libfabric's shm provider leaves its region
// behind when a process exits without closing, and a later process with that pid may
// collide with it, so no shm case forks): the checks every
// datagram endpoint passes (datagram_checks.hh: thousands of frames of every size exchanged
// with a forked child, in order and intact; a peer that exits seen gone within the idle
// timeout; a burst the peer does not read dropped and counted, never blocking; a frame over
// the maximum refused), then what is particular to one endpoint hearing every peer: a hello
// and a goodbye, many children served through one listener with each frame going back to
// its sender only, frames from strangers (garbage, a number no hello gave, a message larger
// than a frame) dropped and counted, a connect nobody answers timing out naming the address,
// and malformed addresses and missing providers refused with what is available.
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/byte_order.hh"
#include "base/clock.hh"
#include "base/params.hh"
#include "datagram_checks.hh"
#include "drivers/datagram.hh"
#include "drivers/ofi/ofi_fabric.hh"
#include "test_case.hh"
#include "value_or_fail.hh"

using namespace loom;
using namespace loom::test::datagram;

namespace {

/// The idle timeout the cases run with: short, so that a child that exits is seen gone soon.
/// Network providers bind to loopback: interfaces that come and go on the machine (other
/// tests' network namespaces) are not chosen.
void set_idle_timeout(const char* seconds) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_OFI_DATAGRAM_IDLE_TIMEOUT", seconds).is_ok());
    assert_true(reg.set("LOOM_OFI_ADDR", "127.0.0.1").is_ok());
}

void exchange_over(const std::string& provider) {
    set_idle_timeout("1");
    exchange_with_a_child("ofi:" + provider, 3.0);
}

void full_queue_over(const std::string& provider) {
    set_idle_timeout("10");
    full_queue_drops("ofi:" + provider);
}

// tcp;ofi_rxm takes a burst into queues of its own, as deep as its pools: a burst to a peer
// that does not read never blocks, and every frame is either sent or dropped and counted.
void burst_never_blocks(const std::string& provider) {
    set_idle_timeout("10");
    auto t = make_pair_at("ofi:" + provider);
    std::vector<uint8_t> buf(max_packet);
    size_t len      = make_packet(2048, buf.data());
    const int burst = 4000;
    double started  = now_s();
    for (int i = 0; i < burst; ++i) {
        t.a->send(buf.data(), len);
    }
    assert_true(now_s() - started < 2.0);
    assert_int_equal(t.a->stats().sent + t.a->stats().send_dropped, burst);
}

void oversize_over(const std::string& provider) {
    set_idle_timeout("10");
    oversize_frames_are_refused("ofi:" + provider);
}

// Over a provider's own datagrams (sockets' FI_EP_DGRAM) frames may be lost: those that
// arrive are whole, of every size up to the maximum, in the order sent.
void frames_arrive_whole(const std::string& provider) {
    set_idle_timeout("30");
    auto t = make_pair_at("ofi:" + provider);
    std::vector<uint8_t> buf(max_packet);
    constexpr uint32_t sent = 300;
    uint32_t arrived = 0, last = 0;
    auto take = [&] {
        const uint8_t* p;
        size_t len;
        while (t.b->recv(&p, &len)) {
            uint32_t seq = seq_of(p, len);
            assert_true(seq < sent && is_packet(p, len, seq));
            assert_true(arrived == 0 || seq > last);
            last = seq;
            ++arrived;
        }
    };
    for (uint32_t i = 0; i < sent; ++i) {
        t.a->send(buf.data(), make_packet(i, buf.data()));
        take();
    }
    deadline until(1);
    while (arrived < sent && !until.expired()) {
        take();
        const uint8_t* p;
        size_t len;
        (void)t.a->recv(&p, &len);  // the sender's provider progresses too
    }
    assert_true(arrived > 0);
    assert_int_equal(t.b->stats().received, arrived);
    assert_int_equal(t.b->stats().bad_frames, 0);
}

// A goodbye ends the peer at once (long before the idle timeout); describe() names the
// provider and both addresses.
void hello_and_goodbye(const std::string& provider, const char* endpoint_type) {
    set_idle_timeout("60");
    auto t               = make_pair_at("ofi:" + provider);
    std::string listener = t.ls->address();
    assert_true(listener.starts_with("ofi:"));
    assert_non_null(std::strstr(t.b->describe().c_str(), endpoint_type));
    assert_non_null(std::strstr(t.b->describe().c_str(), listener.c_str()));
    assert_non_null(std::strstr(t.a->describe().c_str(), listener.c_str()));
    assert_true(t.a->alive() && t.b->alive());
    send_packets(*t.a, 3);
    auto seqs = drain(*t.b, 0.1);
    assert_true((seqs == std::vector<uint32_t>{0, 1, 2}));

    t.a.reset();  // says goodbye
    deadline until(2);
    const uint8_t* p;
    size_t len;
    while (t.b->alive() && !until.expired()) {
        (void)t.b->recv(&p, &len);
        sched_yield();
    }
    assert_false(t.b->alive());
    uint8_t bye[8];
    t.b->send(bye, make_bye(bye));
    assert_int_equal(t.b->stats().send_dropped, 1);
    assert_int_equal(t.ls->strangers(), 0);
}

// A listener's endpoint whose reader does not read holds half the hub's receive buffers;
// what comes beyond is dropped and counted (the other peers keep the rest).
void slow_reader_drops_and_counts(const std::string& provider) {
    set_idle_timeout("30");
    auto t = make_pair_at("ofi:" + provider);
    std::vector<uint8_t> buf(64);
    deadline until(10);
    constexpr uint32_t sent = 300;
    for (uint32_t i = 0; i < sent; ++i) {
        be::put32(buf.data(), i);
        be::put32(buf.data() + 4, 64);
        while (!try_send(*t.a, buf.data(), buf.size()) && !until.expired()) {
            (void)t.ls->accept();  // the listener's hub reads on, b's reader does not
        }
    }
    while (t.b->stats().received + t.b->stats().recv_dropped < sent && !until.expired()) {
        const uint8_t* p;
        size_t len;
        (void)t.a->recv(&p, &len);  // the sender's provider progresses too
        assert_null(t.ls->accept().get());
    }
    assert_int_equal(t.b->stats().received, 128);
    assert_int_equal(t.b->stats().recv_dropped, sent - 128);
    auto seqs = drain(*t.b, 0.1);
    assert_int_equal(seqs.size(), 128);
    for (uint32_t i = 0; i < seqs.size(); ++i) {
        assert_int_equal(seqs[i], i);
    }
}

constexpr int peers      = 6;
constexpr uint32_t trips = 150;

// A child: sends frame i stamped with its own number, waits for it to come back, then i+1.
[[noreturn]] void echo_child(const std::string& address, uint32_t who) {
    auto l = drivers::connect_datagram(address, 5);
    if (!l) {
        ::_exit(10);
    }
    std::vector<uint8_t> buf(max_packet);
    deadline until(30);
    for (uint32_t i = 0; i < trips; ++i) {
        size_t len = make_packet(i, buf.data());
        be::put32(buf.data() + 4, who);  // where the length was: the sender's number
        if (!send_reliably(**l, buf.data(), len, until)) {
            ::_exit(3);
        }
        const uint8_t* p = nullptr;
        size_t got       = 0;
        while (!(*l)->recv(&p, &got)) {
            if (until.expired() || !(*l)->alive()) {
                ::_exit(4);
            }
            sched_yield();
        }
        if (got != len || be::get32(p) != i || be::get32(p + 4) != who ||
            std::memcmp(p + 8, buf.data() + 8, len - 8) != 0) {
            ::_exit(2);
        }
    }
    ::_exit(0);  // no goodbye: the parent's endpoint times out
}

// Six children through one listener, all served from one loop: every frame goes back to the
// endpoint it came from, and it came from the child it names.
void many_peers_on_one_listener(const std::string& provider) {
    set_idle_timeout("10");
    auto ls = test::value_or_fail(drivers::listen_datagram("ofi:" + provider));
    std::vector<pid_t> pids;
    for (uint32_t who = 0; who < peers; ++who) {
        pid_t pid = ::fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            echo_child(ls->address(), who);
        }
        pids.push_back(pid);
    }
    std::vector<std::unique_ptr<drivers::datagram_endpoint>> links;
    std::vector<int> owner;  // the child each link belongs to, from its first frame
    std::vector<uint32_t> echoed;
    deadline until(40);
    uint32_t total = 0;
    while (total < peers * trips && !until.expired()) {
        while (auto l = ls->accept()) {
            links.push_back(std::move(l));
            owner.push_back(-1);
            echoed.push_back(0);
        }
        bool busy = false;
        for (size_t k = 0; k < links.size(); ++k) {
            const uint8_t* p;
            size_t len;
            while (links[k]->recv(&p, &len)) {
                busy        = true;
                uint32_t wh = be::get32(p + 4);
                if (owner[k] < 0) {
                    owner[k] = int(wh);
                }
                assert_int_equal(wh, uint32_t(owner[k]));
                assert_int_equal(be::get32(p), echoed[k]);
                ++echoed[k];
                ++total;
                std::vector<uint8_t> copy(p, p + len);  // the frame is valid until the next recv
                assert_true(send_reliably(*links[k], copy.data(), copy.size(), until));
            }
        }
        if (!busy) {
            sched_yield();
        }
    }
    for (pid_t pid : pids) {
        assert_int_equal(reap(pid, 10), 0);
    }
    assert_int_equal(links.size(), peers);
    assert_int_equal(total, peers * trips);
    std::vector<int> seen(peers, 0);
    for (int o : owner) {
        assert_true(o >= 0 && o < peers);
        ++seen[size_t(o)];
    }
    for (int s : seen) {
        assert_int_equal(s, 1);
    }
    assert_int_equal(ls->strangers(), 0);
}

// A raw libfabric endpoint of the listener's provider sends what no loom peer would: the
// listener drops each and counts it, hands out no endpoint, and still serves a real peer.
void strangers_are_dropped_and_counted(void**) {
    set_idle_timeout("10");
    auto ls              = test::value_or_fail(drivers::listen_datagram("ofi:udp"));
    std::string address  = ls->address();
    std::string provider = address.substr(4, address.rfind('/') - 4);
    drivers::ofi::fabric_request request{
        .ep_type = FI_EP_RDM, .caps = FI_MSG, .what = "test", .provider = provider};
    auto raw = test::value_or_fail(drivers::ofi::fabric::open(request));
    auto to  = test::value_or_fail(raw->insert(address.substr(address.rfind('/') + 1), 0));

    std::vector<uint8_t> m(max_packet + 100, 0);
    auto send_raw = [&](size_t len) {
        fi_context2 ctx{};
        ssize_t rc;
        deadline until(5);
        while ((rc = fi_send(raw->ep(), m.data(), len, nullptr, to, &ctx)) == -FI_EAGAIN &&
               !until.expired()) {
            fi_cq_tagged_entry e;
            (void)fi_cq_read(raw->cq(), &e, 1);
        }
        assert_int_equal(rc, 0);
        fi_cq_tagged_entry e;
        while (fi_cq_read(raw->cq(), &e, 1) != 1 && !until.expired()) {
            (void)ls->accept();  // the listener progresses meanwhile
        }
    };
    send_raw(3);  // shorter than a header
    m[0] = 'X';
    send_raw(16);  // not loom's magic
    m[0] = 'L', m[1] = 1, m[2] = 3;
    be::put32(m.data() + 4, 77);
    send_raw(16);                // data naming a number no hello gave
    send_raw(max_packet + 100);  // larger than any frame

    deadline until(2);
    while (ls->strangers() < 4 && !until.expired()) {
        assert_null(ls->accept().get());
        sched_yield();
    }
    assert_int_equal(ls->strangers(), 4);

    // A real peer still gets through.
    std::unique_ptr<drivers::datagram_endpoint> b;
    auto a = test::value_or_fail([&] {
        result<std::unique_ptr<drivers::datagram_endpoint>> r = status(LOOM_ERR_INTERNAL, "");
        std::thread connecting([&] { r = drivers::connect_datagram(address, 5); });
        b = accept_within(*ls, 5);
        connecting.join();
        return r;
    }());
    assert_non_null(b.get());
    send_packets(*a, 2);
    assert_true((drain(*b, 0.1) == std::vector<uint32_t>{0, 1}));
    assert_int_equal(ls->strangers(), 4);
}

// The waker sleeps on the completion queue's wait fd: a frame from the peer ends the sleep
// long before its timeout. udp;ofi_rxd's queue has no wait fd: no waker, callers nap.
void waker_wakes_on_a_frame(const std::string& provider, bool has_wait_fd) {
    set_idle_timeout("30");
    auto t = make_pair_at("ofi:" + provider);
    auto w = t.b->idle_waker();
    assert_int_equal(bool(w), has_wait_fd);
    if (!w) {
        return;
    }
    // Nothing coming (the hand-shake's sends completed and read): it sleeps (most of) its
    // timeout.
    const uint8_t* p = nullptr;
    size_t len       = 0;
    // A wake may be spurious (the contract allows it): one of a few sleeps lasts.
    double longest = 0;
    for (int tries = 0; tries < 5 && longest <= 0.1; ++tries) {
        ::usleep(50'000);
        assert_false(t.b->recv(&p, &len));
        uint64_t token = w.arm(w.ctx);
        assert_false(t.b->recv(&p, &len));
        double idle_from = now_s();
        w.sleep(w.ctx, token, 200'000'000);
        longest = std::max(longest, now_s() - idle_from);
    }
    assert_true(longest > 0.1);

    double started = now_s();
    std::thread later([&] {
        ::usleep(100'000);
        send_packets(*t.a, 1);
    });
    bool got = false;
    while (!got && now_s() - started < 3) {
        uint64_t token = w.arm(w.ctx);
        got            = t.b->recv(&p, &len);
        w.sleep(w.ctx, token, got ? 0 : 2'000'000'000);
    }
    double took = now_s() - started;
    later.join();
    got = got || t.b->recv(&p, &len);
    assert_true(got);
    assert_true(is_packet(p, len, 0));
    assert_true(took < 1.5);
}

void connect_to_nobody_times_out_naming_the_address(const std::string& provider) {
    set_idle_timeout("30");
    std::string address;
    {
        auto ls = test::value_or_fail(drivers::listen_datagram("ofi:" + provider));
        address = ls->address();
    }
    double started = now_s();
    auto l         = drivers::connect_datagram(address, 0.3);
    double took    = now_s() - started;
    assert_false(l.is_ok());
    assert_int_equal(l.error().code(), LOOM_ERR_TIMEOUT);
    assert_non_null(std::strstr(l.error().message().c_str(), address.c_str()));
    assert_true(took >= 0.25 && took < 2.0);
}

void bad_addresses_are_refused_clearly(void**) {
    for (const char* address : {"ofi:udp", "ofi:udp;ofi_rxd/", "ofi:/0200", "ofi:udp/xyz"}) {
        auto l = drivers::connect_datagram(address, 1);
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        assert_non_null(std::strstr(l.error().message().c_str(), address));
        assert_non_null(std::strstr(l.error().message().c_str(), "ofi:PROVIDER/ADDRESS"));
    }
    // A provider libfabric does not offer: the error says which it does.
    auto ls = drivers::listen_datagram("ofi:no-such-provider");
    assert_false(ls.is_ok());
    assert_non_null(std::strstr(ls.error().message().c_str(), "no-such-provider"));
    assert_non_null(std::strstr(ls.error().message().c_str(), "tcp;ofi_rxm"));
    auto l = drivers::connect_datagram("ofi:no-such-provider/0200", 1);
    assert_false(l.is_ok());
    assert_non_null(std::strstr(l.error().message().c_str(), "available"));
}

}  // namespace

LOOM_TEST_MAIN(
    "drivers_ofi_datagram", LOOM_CASE(udp_exchange_between_processes, exchange_over("udp")),
    LOOM_CASE(rxm_exchange_between_processes, exchange_over("tcp;ofi_rxm")),
    LOOM_CASE(net_exchange_between_processes, exchange_over("net")),
    LOOM_CASE(sockets_frames_arrive_whole, frames_arrive_whole("sockets")),
    LOOM_CASE(sockets_hello_and_goodbye, hello_and_goodbye("sockets", "(dgram from ofi:sockets/")),
    LOOM_CASE(shm_hello_and_goodbye, hello_and_goodbye("shm", "(rdm from ofi:shm/")),
    LOOM_CASE(udp_full_queue_drops, full_queue_over("udp")),
    LOOM_CASE(rxm_burst_never_blocks, burst_never_blocks("tcp;ofi_rxm")),
    LOOM_CASE(udp_oversize_frames_are_refused, oversize_over("udp")),
    LOOM_CASE(rxm_oversize_frames_are_refused, oversize_over("tcp;ofi_rxm")),
    LOOM_CASE(udp_hello_and_goodbye, hello_and_goodbye("udp", "(rdm from ofi:udp;ofi_rxd/")),
    LOOM_CASE(rxm_hello_and_goodbye,
              hello_and_goodbye("tcp;ofi_rxm", "(rdm from ofi:tcp;ofi_rxm/")),
    LOOM_CASE(udp_many_peers_on_one_listener, many_peers_on_one_listener("udp")),
    LOOM_CASE(rxm_many_peers_on_one_listener, many_peers_on_one_listener("tcp;ofi_rxm")),
    cmocka_unit_test(strangers_are_dropped_and_counted),
    LOOM_CASE(udp_slow_reader_drops_and_counts, slow_reader_drops_and_counts("udp")),
    LOOM_CASE(rxm_slow_reader_drops_and_counts, slow_reader_drops_and_counts("tcp;ofi_rxm")),
    LOOM_CASE(udp_has_no_waker, waker_wakes_on_a_frame("udp", false)),
    LOOM_CASE(rxm_waker_wakes_on_a_frame, waker_wakes_on_a_frame("tcp;ofi_rxm", true)),
    LOOM_CASE(udp_connect_to_nobody_times_out,
              connect_to_nobody_times_out_naming_the_address("udp")),
    LOOM_CASE(rxm_connect_to_nobody_times_out,
              connect_to_nobody_times_out_naming_the_address("tcp;ofi_rxm")),
    cmocka_unit_test(bad_addresses_are_refused_clearly))
