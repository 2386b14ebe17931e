// SPDX-License-Identifier: Apache-2.0
// The reliable protocol's close over a memif pair, the one link here whose rings go away
// with the peer: whatever the closing side sent last and the other had not read yet is lost.
//   a_closing_peer_waits_until_its_last_acks_are_read
//       rank 0 sends one message and stays away for 200 ms; rank 1 receives it, acks it and
//       closes at once. Rank 1's close must wait for rank 0 to answer its goodbye (that is,
//       to read the ack), so rank 0's send completes with success. Before the goodbye was
//       answered, rank 1 left as soon as its own frames were acked, the memif went down with
//       the ack still in its ring, and rank 0's send failed with LOOM_ERR_PEER_FAILURE
//       although the message had been delivered (a CI run met it under load).
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "dpdk_test_util.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/reliable/reliable.hh"
#include "test_case.hh"

using namespace loom;
using namespace loom::drivers::dpdk;

namespace {

constexpr double open_timeout_s = 10;

// Rank `rank` of 2 over its side of a memif pair (rank 0 serves), connected.
result<std::unique_ptr<drivers::endpoint>> open_rank(int rank, const std::string& socket) {
    port_config c;
    c.device = memif_vdev(rank == 0 ? "net_memif_rel0" : "net_memif_rel1", socket, rank == 0, 0);
    c.retry_start    = rank != 0;
    c.link_timeout_s = open_timeout_s;
    auto p           = port::open(c);
    if (!p) {
        return p.error();
    }
    std::vector<std::unique_ptr<drivers::common::frame_link>> links;
    links.push_back(std::make_unique<eth_link>(std::move(*p)));
    drivers::endpoint_config config;
    config.rank      = rank;
    config.size      = 2;
    config.job       = "rel-close-" + socket;
    config.timeout_s = open_timeout_s;
    auto opts        = drivers::reliable::options_from_params();
    if (!opts) {
        return opts.error();
    }
    auto ep = drivers::reliable::open_reliable(config, std::move(links), {0, 0}, *opts);
    if (!ep) {
        return ep.error();
    }
    if (status st = (*ep)->connect(); !st.is_ok()) {
        return st;
    }
    return ep;
}

// The first completion within timeout_s, or one with cookie 0 and status -1.
drivers::completion wait_one(const drivers::fast_path& fp, double timeout_s) {
    drivers::completion c{};
    c.status = loom_status_t(-1);
    for (deadline until(timeout_s); !until.expired();) {
        if (fp.poll(fp.ctx, &c, 1) == 1) {
            return c;
        }
        ::usleep(50);
    }
    return c;
}

void a_closing_peer_waits_until_its_last_acks_are_read(void**) {
    std::string socket = test::dpdk::unique_socket("rel-close");
    pid_t pid          = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        auto ep = open_rank(1, socket);
        if (!ep) {
            std::fprintf(stderr, "# rank 1: %s\n", ep.error().to_string().c_str());
            ::_exit(10);
        }
        const auto& fp   = (*ep)->fast();
        uint8_t data[64] = {};
        if (fp.post_recv(fp.ctx, 0, 3, 0, data, sizeof data, 7) != 0) {
            ::_exit(11);
        }
        drivers::completion c = wait_one(fp, 20);
        if (c.cookie != 7 || c.status != LOOM_SUCCESS || data[63] != 63) {
            std::fprintf(stderr, "# rank 1: receive ended with status %d\n", c.status);
            ::_exit(12);
        }
        double t0 = now_s();
        (*ep)->close();  // at once: the ack of the message is at most on its way
        std::fprintf(stderr, "# rank 1: close took %.3f s\n", now_s() - t0);
        ::_exit(0);
    }
    auto ep = open_rank(0, socket);
    if (!ep) {
        fail_msg("rank 0: %s", ep.error().to_string().c_str());
    }
    const auto& fp   = (*ep)->fast();
    uint8_t data[64] = {};
    for (int i = 0; i < 64; ++i) {
        data[i] = uint8_t(i);
    }
    assert_int_equal(fp.post_send(fp.ctx, 1, 3, 0, data, sizeof data, 5), LOOM_SUCCESS);
    drivers::completion none[1];
    (void)fp.poll(fp.ctx, none, 0);  // the frame leaves...
    ::usleep(200000);                // ...and we are away while rank 1 acks it and closes
    drivers::completion c = wait_one(fp, 20);
    std::printf("# rank 0: send completed with status %d\n", c.status);
    assert_int_equal(c.cookie, 5);
    assert_int_equal(c.status, LOOM_SUCCESS);
    int st = 0;
    assert_int_equal(::waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

}  // namespace

LOOM_DPDK_TEST_MAIN("drivers_dpdk_reliable",
                    cmocka_unit_test(a_closing_peer_waits_until_its_last_acks_are_read));
