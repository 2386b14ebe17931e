// SPDX-License-Identifier: Apache-2.0
// The dpdk: datagram endpoint (drivers/dpdk/dpdk_datagram.cc) with the checks every datagram
// endpoint passes (tests/drivers/datagram_checks.hh), over memif between real processes,
// and over af_packet on a veth pair in a network namespace of the test's own. Each case
// runs in a process of its own, and forks its peer before the first DPDK call
// (dpdk_test_util.hh): the shared checks listen before they fork, so the cases here put
// the same building blocks in the order DPDK needs.
//   exchange_with_a_child            2000 frames of every size each way, in order and
//                                    intact; the child exits: alive() false within 3 s and
//                                    a send after it dropped and counted
//   two_clients_by_interface_id      two children on one listener, ids 0 and 1, each its
//                                    own exchange
//   clients_without_ids_take_free_ones   three children on the listener's address, each
//                                    given a free id by the listener, each its own exchange
//   taken_id_is_refused              a second client on an id in use times out naming its
//                                    address; the first keeps its link
//   full_queue_drops                 4000 frames at a peer that does not read: dropped and
//                                    counted, sent + dropped = 4000, within 2 s
//   oversize_frames_are_refused      a frame over datagram_max_frame refused, the next one
//                                    through (a memif pair inside this process)
//   connect_to_nobody_times_out      a connect with no listener fails in its time, naming
//                                    the address
//   bad_addresses_are_refused        malformed dpdk: addresses refused, saying the forms
//   af_packet_over_veth              frames of every size, echoed over af_packet ports on a
//                                    veth pair (SKIP where no network namespace can be made)
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "datagram_checks.hh"
#include "dpdk_test_util.hh"
#include "drivers/datagram.hh"
#include "test_case.hh"
#include "value_or_fail.hh"

using namespace loom;
using namespace loom::test::datagram;
using loom::test::dpdk::channel;

namespace {

std::string memif_address(const char* what) {
    return "dpdk:memif:" + test::dpdk::unique_socket(what);
}

/// The listener's side of an exchange with a child: accept, exchange, bye, reap.
void serve_exchange(datagram_endpoint& l, pid_t pid) {
    assert_int_equal(exchange(l, exchanged, 30), 0);
    assert_int_equal(l.stats().received, exchanged);
    uint8_t bye[max_packet];
    size_t bye_len = make_bye(bye);
    assert_true(send_reliably(l, bye, bye_len, deadline(5)));
    const uint8_t* p;
    size_t len;
    int child = reap(pid, 10, [&] {
        (void)l.recv(&p, &len);
        sched_yield();
    });
    assert_int_equal(child, 0);
}

void exchange_with_a_child(void**) {
    std::string address = memif_address("dgram-exchange");
    pid_t pid           = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_exchange(address);  // connects (retrying until the listener is up), exchanges
    }
    auto ls = test::value_or_fail(drivers::listen_datagram(address));
    assert_string_equal(ls->address().c_str(), address.c_str());
    auto l = accept_within(*ls, 10);
    if (!l) {
        reap(pid, 1);
        LOOM_FAIL("no connection from the child at " + address);
    }
    serve_exchange(*l, pid);

    // The child is gone: the link notices within the down grace and a margin.
    double gone_at = now_s();
    const uint8_t* p;
    size_t len;
    while (l->alive() && now_s() - gone_at < 3.0) {
        (void)l->recv(&p, &len);
        ::usleep(1000);
    }
    assert_false(l->alive());
    std::printf("# %s: alive() false %.3f s after the child exited\n", l->describe().c_str(),
                now_s() - gone_at);
    uint8_t bye[max_packet];
    l->send(bye, make_bye(bye));  // a dead link drops, counted
    assert_true(l->stats().send_dropped > 0);
}

void two_clients_by_interface_id(void**) {
    std::string address = memif_address("dgram-two");
    pid_t pids[2];
    for (int id = 0; id < 2; ++id) {
        pids[id] = ::fork();
        assert_true(pids[id] >= 0);
        if (pids[id] == 0) {
            child_exchange(address + ":" + std::to_string(id));
        }
    }
    auto ls = test::value_or_fail(drivers::listen_datagram(address));
    // accept() hands out whichever client said hello first; each endpoint names its id, so
    // each child is known by the id it asked for, and each id is taken exactly once.
    std::unique_ptr<datagram_endpoint> ends[2];
    for (int n = 0; n < 2; ++n) {
        auto e = accept_within(*ls, 10);
        if (!e) {
            reap(pids[0], 1), reap(pids[1], 1);
            LOOM_FAIL("two children did not both connect to " + address);
        }
        int id = std::strstr(e->describe().c_str(), (address + ":1").c_str()) != nullptr ? 1 : 0;
        assert_non_null(
            std::strstr(e->describe().c_str(), (address + ":" + std::to_string(id)).c_str()));
        assert_null(ends[id].get());
        ends[id] = std::move(e);
    }
    serve_exchange(*ends[0], pids[0]);
    serve_exchange(*ends[1], pids[1]);
}

// Three children on the listener's own address (no id): each takes a free one.
void clients_without_ids_take_free_ones(void**) {
    std::string address = memif_address("dgram-any");
    constexpr int n     = 3;
    pid_t pids[n];
    for (auto& pid : pids) {
        pid = ::fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            child_exchange(address);
        }
    }
    auto ls = test::value_or_fail(drivers::listen_datagram(address));
    std::unique_ptr<datagram_endpoint> ends[n];
    for (auto& e : ends) {
        e = accept_within(*ls, 15);
        if (!e) {
            for (pid_t pid : pids) {
                reap(pid, 1);
            }
            LOOM_FAIL("three children did not all connect to " + address);
        }
    }
    // Each child's exit status is its own exchange's; which endpoint is whose is not known,
    // so every endpoint runs its exchange, then the children are reaped.
    for (auto& e : ends) {
        assert_int_equal(exchange(*e, exchanged, 30), 0);
        uint8_t bye[max_packet];
        assert_true(send_reliably(*e, bye, make_bye(bye), deadline(5)));
    }
    for (pid_t pid : pids) {
        assert_int_equal(reap(pid, 10,
                              [&] {
                                  const uint8_t* p;
                                  size_t len;
                                  for (auto& e : ends) {
                                      (void)e->recv(&p, &len);
                                  }
                                  sched_yield();
                              }),
                         0);
    }
}

// An id already connected is refused by the server: the second client's connect times out
// naming its address, and the first keeps its link.
void taken_id_is_refused(void**) {
    std::string address = memif_address("dgram-taken");
    channel first_in, done;
    pid_t pids[2];
    for (int k = 0; k < 2; ++k) {
        pids[k] = ::fork();
        assert_true(pids[k] >= 0);
        if (pids[k] == 0) {
            if (k == 1) {
                (void)first_in.get(20, 0);  // until the first holds id 0
            }
            auto l = drivers::connect_datagram(address + ":0", k == 0 ? 10 : 1.5);
            if (k == 0) {
                (void)done.get(30, 0);
                ::_exit(l ? 0 : 10);
            }
            bool refused = !l && l.error().code() == LOOM_ERR_TIMEOUT &&
                           l.error().message().find(address + ":0") != std::string::npos;
            if (!refused) {
                std::fprintf(stderr, "# second client: %s\n",
                             l ? "connected" : l.error().to_string().c_str());
            }
            ::_exit(refused ? 0 : 11);
        }
    }
    auto ls    = test::value_or_fail(drivers::listen_datagram(address));
    auto first = accept_within(*ls, 10);
    first_in.put(1);
    assert_non_null(first.get());
    assert_int_equal(reap(pids[1], 10), 0);
    assert_true(first->alive());
    assert_null(ls->accept().get());
    done.put(1);
    assert_int_equal(reap(pids[0], 10), 0);
}

void full_queue_drops(void**) {
    std::string address = memif_address("dgram-full");
    channel gate;
    pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        auto l = drivers::connect_datagram(address, 10);
        (void)gate.get(30, 0);  // never reads until the parent is done
        ::_exit(l ? 0 : 10);
    }
    auto ls = test::value_or_fail(drivers::listen_datagram(address));
    auto l  = accept_within(*ls, 10);
    if (!l) {
        gate.put(1);
        reap(pid, 1);
        LOOM_FAIL("no connection from the child");
    }
    std::vector<uint8_t> buf(max_packet);
    size_t len      = make_packet(2048, buf.data());
    double started  = now_s();
    const int burst = 4000;
    for (int i = 0; i < burst; ++i) {
        l->send(buf.data(), len);
    }
    double took = now_s() - started;
    gate.put(1);
    assert_int_equal(reap(pid, 5), 0);
    assert_true(l->stats().send_dropped > 0);
    assert_int_equal(l->stats().sent + l->stats().send_dropped, burst);
    assert_true(took < 2.0);
    std::printf("# %d frames of %zu bytes: %llu sent, %llu dropped, in %.3f s\n", burst, len,
                (unsigned long long)l->stats().sent, (unsigned long long)l->stats().send_dropped,
                took);
}

void oversize_frames_are_refused(void**) {
    test::datagram::oversize_frames_are_refused(memif_address("dgram-oversize"));
}

void connect_to_nobody_times_out(void**) {
    std::string address = memif_address("dgram-nobody");
    double started      = now_s();
    auto l              = drivers::connect_datagram(address, 0.5);
    double took         = now_s() - started;
    assert_false(l.is_ok());
    assert_int_equal(l.error().code(), LOOM_ERR_TIMEOUT);
    test::expect_has(l.error().message(), address);
    assert_true(took >= 0.45 && took < 3.0);
}

void bad_addresses_are_refused(void**) {
    for (const char* address :
         {"dpdk:", "dpdk:memif", "dpdk:memif:", "dpdk:memif:a,b", "dpdk:memif:a:x",
          "dpdk:memif:a:", "dpdk:ring:a", "dpdk:af_packet:", "dpdk:af_packet:eth0,x"}) {
        auto l = drivers::connect_datagram(address, 1);
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        test::expect_has(l.error().message(), address);
    }
    // A listener serves every id: naming one is a mistake.
    auto ls = drivers::listen_datagram("dpdk:memif:a:1");
    assert_false(ls.is_ok());
    assert_int_equal(ls.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    auto other = drivers::listen_datagram("dpdk:nothing:a");
    assert_false(other.is_ok());
    test::expect_has(other.error().message(), "dpdk:memif:NAME");
}

/// Echoes every frame back until a bye (seq_of == bye_seq); the child of af_packet_over_veth.
[[noreturn]] void echo_child(const std::string& address) {
    auto l = drivers::connect_datagram(address, 10);
    if (!l) {
        std::fprintf(stderr, "# child: %s\n", l.error().to_string().c_str());
        ::_exit(10);
    }
    deadline until(60);
    const uint8_t* p;
    size_t len;
    std::vector<uint8_t> copy(max_packet);
    while (!until.expired()) {
        if (!(*l)->recv(&p, &len)) {
            sched_yield();
            continue;
        }
        if (seq_of(p, len) == bye_seq) {
            ::_exit(0);
        }
        memcpy(copy.data(), p, len);
        (*l)->send(copy.data(), len);
    }
    ::_exit(6);
}

void af_packet_over_veth(void**) {
    // A network namespace of this process's own: the veth pair and its MTU change nothing on
    // the machine, and go with the process.
    if (::unshare(CLONE_NEWNET) != 0) {
        std::printf("# SKIP af_packet over veth: no network namespace (unshare: %s)\n",
                    std::strerror(errno));
        skip();
    }
    if (std::system("ip link add loomva type veth peer name loomvb && "
                    "ip link set loomva mtu 9000 up && ip link set loomvb mtu 9000 up") != 0) {
        std::printf("# SKIP af_packet over veth: no veth pair (ip link add failed)\n");
        skip();
    }
    pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        echo_child("dpdk:af_packet:loomvb");
    }
    auto ls = test::value_or_fail(drivers::listen_datagram("dpdk:af_packet:loomva"));
    auto l  = accept_within(*ls, 10);
    assert_non_null(l.get());
    // One frame in flight at a time (the kernel's rings may drop under a burst; a lost one
    // is sent again), every size from 8 to the maximum by a step of 37.
    std::vector<uint8_t> buf(max_packet);
    uint32_t frames = 0, resent = 0;
    for (uint32_t i = 0; i < exchanged; ++i) {
        size_t len  = make_packet(i, buf.data());
        bool echoed = false;
        deadline until(10);
        while (!echoed && !until.expired()) {
            l->send(buf.data(), len);
            deadline wait(0.2);
            const uint8_t* p;
            size_t got;
            while (!wait.expired()) {
                if (l->recv(&p, &got)) {
                    if (seq_of(p, got) == i) {
                        assert_true(is_packet(p, got, i));
                        echoed = true;
                        break;
                    }
                } else {
                    sched_yield();
                }
            }
            resent += echoed ? 0 : 1;
        }
        assert_true(echoed);
        ++frames;
    }
    uint8_t bye[max_packet];
    size_t bye_len = make_bye(bye);
    l->send(bye, bye_len);
    assert_int_equal(reap(pid, 10,
                          [&] {
                              l->send(bye, bye_len);
                              ::usleep(10000);
                          }),
                     0);
    std::printf("# %u frames of 8..%zu bytes echoed over %s (%u sent again)\n", frames, max_packet,
                l->describe().c_str(), resent);
}

}  // namespace

LOOM_DPDK_TEST_MAIN("drivers_dpdk_datagram", cmocka_unit_test(exchange_with_a_child),
                    cmocka_unit_test(two_clients_by_interface_id),
                    cmocka_unit_test(clients_without_ids_take_free_ones),
                    cmocka_unit_test(taken_id_is_refused), cmocka_unit_test(full_queue_drops),
                    cmocka_unit_test(oversize_frames_are_refused),
                    cmocka_unit_test(connect_to_nobody_times_out),
                    cmocka_unit_test(bad_addresses_are_refused),
                    cmocka_unit_test(af_packet_over_veth))
