// SPDX-License-Identifier: Apache-2.0
// Sleeping on a DPDK port's rx interrupt (dpdk_port.hh rx_interrupt_fd, the reliable
// endpoint's waker in reliable_wait.cc). DPDK 22.11's memif has no rx interrupt, so the
// port here is a net_tap one, in a network namespace of the process's own (no other
// traffic; IPv6 off so the kernel sends nothing by itself), fed from the kernel's side by an
// AF_PACKET socket on a thread. Each case runs in a process of its own (dpdk_test_util.hh):
//   rank_in_waker_is_woken_by_a_frame   a reliable endpoint over the tap link offers a
//                                       waker; a caller asleep in it (3 s timeout) is woken
//                                       by one frame sent 300 ms later, and the frame is
//                                       there to receive
//   waker_sleeps_its_timeout_without_frames   no frame: the sleep lasts its timeout (it
//                                       leaves the run queue, it does not return at once)
//   memif_port_has_no_rx_interrupt      the emulation's memif port opens with rx_interrupts
//                                       asked for, says it has none, and its endpoint's
//                                       waker is null (the caller naps, as before)
// SKIP (not a pass) where no network namespace or tap device can be made.
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.hh"
#include "dpdk_test_util.hh"
#include "drivers/dpdk/dpdk_frame.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/reliable/reliable.hh"
#include "test_case.hh"
#include "value_or_fail.hh"

using namespace loom;
using namespace loom::drivers::dpdk;

namespace {

constexpr const char* tap_iface = "loomwake0";

// A namespace of our own with IPv6 off (no router solicitations or DAD frames waking the
// sleeper), or a SKIP.
void private_network_or_skip() {
    if (::unshare(CLONE_NEWNET) != 0) {
        std::printf("# SKIP no network namespace (unshare: %s)\n", std::strerror(errno));
        skip();
    }
    for (const char* p : {"/proc/sys/net/ipv6/conf/default/disable_ipv6",
                          "/proc/sys/net/ipv6/conf/all/disable_ipv6"}) {
        std::ofstream(p) << "1\n";
    }
}

std::unique_ptr<eth_link> open_tap_or_skip() {
    port_config c;
    c.device        = std::string("net_tap_loomwake,iface=") + tap_iface;
    c.wait_link     = false;
    c.rx_interrupts = true;
    auto p          = port::open(c);
    if (!p) {
        std::printf("# SKIP no tap port: %s\n", p.error().to_string().c_str());
        skip();
    }
    return std::make_unique<eth_link>(std::move(*p));
}

// One loom-typed broadcast frame into the tap interface from the kernel's side.
bool send_from_kernel() {
    int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    sockaddr_ll to{};
    to.sll_family  = AF_PACKET;
    to.sll_ifindex = int(if_nametoindex(tap_iface));
    to.sll_halen   = 6;
    memset(to.sll_addr, 0xff, 6);
    uint8_t frame[64]{};
    memset(frame, 0xff, 6);
    frame[6]  = 0x02;  // a locally administered source
    frame[12] = uint8_t(loom_ethertype >> 8);
    frame[13] = uint8_t(loom_ethertype & 0xff);
    bool ok   = ::sendto(fd, frame, sizeof frame, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) ==
              ssize_t(sizeof frame);
    ::close(fd);
    return ok;
}

// A reliable endpoint, rank 0 of 2, whose one link is `link` (the peer behind it never
// answers: the waker needs no connection).
std::unique_ptr<drivers::endpoint> endpoint_over_link(std::unique_ptr<eth_link> link) {
    drivers::endpoint_config config;
    config.rank = 0;
    config.size = 2;
    config.job  = "wake-test";
    std::vector<std::unique_ptr<drivers::common::frame_link>> links;
    links.push_back(std::move(link));
    auto opts = test::value_or_fail(drivers::reliable::options_from_params());
    return test::value_or_fail(
        drivers::reliable::open_reliable(config, std::move(links), {0, 0}, opts));
}

// A tap link in a private network, quiet (whatever the interface's start produced is read
// first), under a reliable endpoint whose waker sleeps on the link's rx interrupt.
struct tap_endpoint {
    eth_link* raw = nullptr;  // owned by ep
    std::unique_ptr<drivers::endpoint> ep;
    drivers::waker w;
};

tap_endpoint quiet_tap_endpoint() {
    private_network_or_skip();
    auto link = open_tap_or_skip();
    assert_true(link->rx_event_fd() >= 0);
    tap_endpoint t;
    t.raw = link.get();
    drivers::common::frame_view views[32];
    for (deadline quiet(0.3); !quiet.expired();) {
        (void)t.raw->recv(views, 32);
    }
    t.ep = endpoint_over_link(std::move(link));
    t.w  = t.ep->idle_waker();
    assert_true(bool(t.w));
    return t;
}

void rank_in_waker_is_woken_by_a_frame(void**) {
    auto [raw, ep, w] = quiet_tap_endpoint();
    drivers::common::frame_view views[32];
    std::thread kernel([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        (void)send_from_kernel();
    });
    uint64_t token = w.arm(w.ctx);
    int before     = raw->recv(views, 32);  // the pass after arming: nothing yet
    auto t0        = std::chrono::steady_clock::now();
    w.sleep(w.ctx, token, 3'000'000'000);
    double slept = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    kernel.join();
    std::printf("# woken after %.3f s (frames before the sleep: %d)\n", slept, before);
    assert_int_equal(before, 0);
    assert_true(slept > 0.2);  // it slept until the frame...
    assert_true(slept < 2.0);  // ...and the frame, not the timeout, ended it
    int got = 0;
    for (deadline d(1); got == 0 && !d.expired();) {
        got = raw->recv(views, 32);
    }
    assert_int_equal(got, 1);
}

void waker_sleeps_its_timeout_without_frames(void**) {
    auto [raw, ep, w] = quiet_tap_endpoint();
    uint64_t token    = w.arm(w.ctx);
    auto t0           = std::chrono::steady_clock::now();
    w.sleep(w.ctx, token, 200'000'000);
    double slept = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("# slept %.3f s of 0.200\n", slept);
    assert_true(slept > 0.15);
    assert_true(slept < 2.0);
}

void memif_port_has_no_rx_interrupt(void**) {
    port_config c;
    c.device    = memif_vdev("net_memif_wake", loom::test::dpdk::unique_socket("wake"), true, 0);
    c.wait_link = false;
    c.rx_interrupts = true;
    auto p          = test::value_or_fail(port::open(c));
    std::printf("# memif rx interrupt: %s\n", p->rx_interrupt_why().c_str());
    assert_int_equal(p->rx_interrupt_fd(), -1);
    auto link = std::make_unique<eth_link>(std::move(p));
    auto ep   = endpoint_over_link(std::move(link));
    assert_false(bool(ep->idle_waker()));
}

}  // namespace

LOOM_DPDK_TEST_MAIN("drivers_dpdk_wake", cmocka_unit_test(rank_in_waker_is_woken_by_a_frame),
                    cmocka_unit_test(waker_sleeps_its_timeout_without_frames),
                    cmocka_unit_test(memif_port_has_no_rx_interrupt))
