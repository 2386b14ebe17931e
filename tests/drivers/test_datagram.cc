// SPDX-License-Identifier: Apache-2.0
// The drivers' datagram endpoints (drivers/datagram.hh) over real sockets and shared memory,
// between real processes (fork): over tcp and shm both sides exchange thousands of frames of
// every size up to datagram_max_frame, each checked on arrival, in order; a frame over the
// maximum is refused and counted; a burst the peer does not read is dropped and counted,
// never blocks; a peer that exits is seen by alive() within a second; a tcp frame longer
// than the maximum closes the endpoint; the fault wrapper drops, duplicates and reorders as
// asked, the same way every time for one seed (also as a "fault:" address reading
// LOOM_FAULT_*); a connect nobody answers times out naming the address; an unknown address
// form is refused.
//
// Every wait has a deadline, and idle poll loops yield (the test machines may have 2 cores).
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
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
#include "test_case.hh"
#include "value_or_fail.hh"

using namespace loom;
using drivers::datagram_endpoint;
using drivers::datagram_listener;
using drivers::datagram_max_frame;
using namespace loom::test::datagram;

namespace {

// A raw socket writes one good frame and then a length over the maximum.
void tcp_bad_frame_closes_the_link(void**) {
    auto ls = drivers::listen_datagram("tcp:127.0.0.1:0");
    assert_true(ls.is_ok());
    std::string address = (*ls)->address();
    int port            = std::stoi(address.substr(address.rfind(':') + 1));
    int raw             = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family      = AF_INET;
    sa.sin_port        = htons(uint16_t(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(::connect(raw, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    auto l = accept_within(**ls, 5);
    assert_non_null(l.get());

    std::vector<uint8_t> frame(4 + max_packet);
    size_t len = make_packet(5, frame.data() + 4);
    be::put32(frame.data(), uint32_t(len));
    assert_int_equal(::send(raw, frame.data(), 4 + len, 0), ssize_t(4 + len));
    size_t bad         = max_packet + 1;
    uint8_t bad_pre[8] = {uint8_t(bad >> 24), uint8_t(bad >> 16), uint8_t(bad >> 8), uint8_t(bad)};
    assert_int_equal(::send(raw, bad_pre, sizeof bad_pre, 0), ssize_t(sizeof bad_pre));

    deadline until(2);
    const uint8_t* p;
    size_t got;
    int good = 0;
    while (l->alive() && !until.expired()) {
        if (l->recv(&p, &got)) {
            assert_true(is_packet(p, got, 5));
            ++good;
        } else {
            sched_yield();
        }
    }
    assert_int_equal(good, 1);
    assert_false(l->alive());
    assert_int_equal(l->stats().bad_frames, 1);
    ::close(raw);
}

void fault_wrapper_drops_duplicates_and_reorders(void**) {
    {
        auto t     = make_pair_at("tcp:127.0.0.1:0");
        auto lossy = drivers::lossy_datagram(std::move(t.a), 1.0, 0, 0, 1);
        send_packets(*lossy, 100);
        assert_int_equal(lossy->stats().sent, 0);
        assert_true(drain(*t.b, 0.2).empty());
    }
    {
        auto t     = make_pair_at("tcp:127.0.0.1:0");
        auto lossy = drivers::lossy_datagram(std::move(t.a), 0, 1.0, 0, 2);
        send_packets(*lossy, 100);
        auto seqs = drain(*t.b, 0.2);
        assert_int_equal(seqs.size(), 200);
        for (uint32_t i = 0; i < 200; ++i) {
            assert_int_equal(seqs[i], i / 2);
        }
        assert_int_equal(lossy->stats().sent, 200);
    }
    {
        // reorder = 1: every packet that finds the buffer empty waits for the next one.
        auto t     = make_pair_at("tcp:127.0.0.1:0");
        auto lossy = drivers::lossy_datagram(std::move(t.a), 0, 0, 1.0, 3);
        send_packets(*lossy, 5);
        const uint8_t* p;
        size_t len;
        (void)lossy->recv(&p, &len);  // flushes the held packet 4
        auto seqs = drain(*t.b, 0.2);
        assert_true((seqs == std::vector<uint32_t>{1, 0, 3, 2, 4}));
    }
}

/// probability 0.3 and stream `seed`.
std::vector<uint32_t> faulty_run(const std::string& listen_at, uint64_t seed) {
    auto t     = make_pair_at(listen_at);
    auto lossy = drivers::lossy_datagram(std::move(t.a), 0.3, 0.3, 0.3, seed);
    send_packets(*lossy, 100);
    const uint8_t* p;
    size_t len;
    (void)lossy->recv(&p, &len);  // flushes a held frame
    return drain(*t.b, 0.2);
}

// One seed, one pattern: over tcp and shm alike, and another seed gives another one.
void fault_wrapper_is_deterministic(void**) {
    auto first = faulty_run("tcp:127.0.0.1:0", 42);
    assert_true((faulty_run("tcp:127.0.0.1:0", 42) == first));
    assert_true((faulty_run(unique_shm_name("faults"), 42) == first));
    assert_false((faulty_run("tcp:127.0.0.1:0", 43) == first));
    // Each kind of fault happened: a seq missing, one twice, one before its predecessor.
    std::vector<int> seen(100, 0);
    bool reordered = false;
    for (size_t k = 0; k < first.size(); ++k) {
        assert_true(first[k] < 100);
        ++seen[first[k]];
        reordered = reordered || (k > 0 && first[k] < first[k - 1]);
    }
    assert_true(std::count(seen.begin(), seen.end(), 0) > 0);
    assert_true(std::count(seen.begin(), seen.end(), 2) > 0);
    assert_true(reordered);
}

// "fault:ADDRESS" connects to ADDRESS through the wrapper, with LOOM_FAULT_* as it stands.
void fault_address_reads_the_fault_parameters(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_FAULT_DROP", "1").is_ok());
    auto t = make_pair_at("tcp:127.0.0.1:0", "fault:");
    assert_true(reg.set("LOOM_FAULT_DROP", "0").is_ok());
    assert_non_null(std::strstr(t.a->describe().c_str(), "(lossy)"));
    send_packets(*t.a, 10);
    assert_true(drain(*t.b, 0.2).empty());
    assert_int_equal(t.a->stats().sent, 0);

    assert_true(reg.set("LOOM_FAULT_DUP", "1.5").is_ok());  // not a probability
    auto bad = drivers::connect_datagram("fault:" + t.ls->address(), 1);
    assert_true(reg.set("LOOM_FAULT_DUP", "0").is_ok());
    assert_false(bad.is_ok());
    assert_non_null(std::strstr(bad.error().message().c_str(), "LOOM_FAULT_DUP"));
}

void connect_to_nobody_times_out_naming_the_address(void**) {
    // A port that was free a moment ago (listen on port 0, then close).
    std::string tcp_address;
    {
        auto ls = drivers::listen_datagram("tcp:127.0.0.1:0");
        assert_true(ls.is_ok());
        tcp_address = (*ls)->address();
    }
    for (const std::string& address : {tcp_address, unique_shm_name("nobody")}) {
        double started = now_s();
        auto l         = drivers::connect_datagram(address, 0.3);
        double took    = now_s() - started;
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_TIMEOUT);
        assert_non_null(std::strstr(l.error().message().c_str(), address.c_str()));
        assert_true(took >= 0.25 && took < 2.0);
    }
}

void bad_addresses_are_refused_clearly(void**) {
    for (const char* address : {"udp:127.0.0.1:7000", "127.0.0.1:7000", ""}) {
        auto l = drivers::connect_datagram(address, 1);
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        assert_non_null(std::strstr(l.error().message().c_str(), "tcp:HOST:PORT"));
        assert_non_null(std::strstr(l.error().message().c_str(), "shm:NAME"));
        auto ls = drivers::listen_datagram(address);
        assert_false(ls.is_ok());
        assert_int_equal(ls.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    }
    for (const char* address : {"tcp:127.0.0.1", "tcp:127.0.0.1:99999", "shm:"}) {
        auto l = drivers::connect_datagram(address, 1);
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        assert_non_null(std::strstr(l.error().message().c_str(), address));
    }
}

}  // namespace

LOOM_TEST_MAIN("drivers_datagram",
               LOOM_CASE(tcp_exchange_between_processes, exchange_with_a_child("tcp:127.0.0.1:0")),
               LOOM_CASE(shm_exchange_between_processes,
                         exchange_with_a_child(unique_shm_name("exchange"))),
               LOOM_CASE(tcp_full_queue_drops, full_queue_drops("tcp:127.0.0.1:0")),
               LOOM_CASE(shm_full_queue_drops, full_queue_drops(unique_shm_name("burst"))),
               cmocka_unit_test(tcp_bad_frame_closes_the_link),
               cmocka_unit_test(fault_wrapper_drops_duplicates_and_reorders),
               LOOM_CASE(tcp_oversize_frames_are_refused,
                         oversize_frames_are_refused("tcp:127.0.0.1:0")),
               LOOM_CASE(shm_oversize_frames_are_refused,
                         oversize_frames_are_refused(unique_shm_name("oversize"))),
               cmocka_unit_test(fault_wrapper_is_deterministic),
               cmocka_unit_test(fault_address_reads_the_fault_parameters),
               cmocka_unit_test(connect_to_nobody_times_out_naming_the_address),
               cmocka_unit_test(bad_addresses_are_refused_clearly))
