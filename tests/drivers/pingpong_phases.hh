// SPDX-License-Identifier: Apache-2.0
// The timed phases of the driver ping-pong benchmarks (tests/drivers_tcp/bench_tcp_pingpong.cc,
// tests/drivers_ofi/bench_ofi_pingpong.cc), one copy so every driver is measured by the
// same code: round trips of one size, and a one-way stream of large messages with two in
// flight. Two ranks, 0 and 1; figures are rank 0's.
#pragma once

#include <poll.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "driver_test_util.hh"

namespace loom::test::pingpong {

/// How a waiting rank polls: busy (wait_fd < 0), or, after 100 empty polls in a row, asleep
/// in poll(2) on the endpoint's wait_fd() for at most 1 ms, as an engine's idle policy could.
struct poller {
    const drivers::fast_path& f;
    int wait_fd = -1;
    int idle    = 0;

    int poll(drivers::completion* c, int max) {
        int n = f.poll(f.ctx, c, max);
        idle  = n > 0 ? 0 : idle + 1;
        if (wait_fd >= 0 && idle > 100) {
            pollfd pfd{wait_fd, POLLIN, 0};
            ::poll(&pfd, 1, 1);
            idle = 0;
        }
        return n;
    }

    /// Polls until `want` completions came; false on a failed one or after `timeout_s`.
    bool spin(int want, double timeout_s = 60) {
        deadline until(timeout_s);
        drivers::completion c[8];
        for (int got = 0; got < want;) {
            int n = poll(c, 8);
            for (int i = 0; i < n; ++i) {
                if (c[i].status != LOOM_SUCCESS) {
                    std::fprintf(stderr, "completion with status %d\n", c[i].status);
                    return false;
                }
            }
            got += n;
            if (n == 0 && until.expired()) {
                return false;
            }
        }
        return true;
    }
};

/// `iters` round trips of `len` bytes: seconds per round trip (rank 0), 0 (rank 1), < 0 on
/// error.
inline double round_trips(int rank, poller& p, uint8_t* out, uint8_t* in, size_t len, int iters,
                          uint64_t tag0) {
    const auto& f = p.f;
    int peer      = 1 - rank;
    double t0     = now_s();
    for (int i = 0; i < iters; ++i) {
        uint64_t tag = tag0 + uint64_t(i);
        f.post_recv(f.ctx, peer, tag, 0, in, len, 0);
        if (rank == 0) {
            f.post_send(f.ctx, peer, tag, 0, out, len, 1);
            if (!p.spin(2)) {
                return -1;
            }
        } else {
            if (!p.spin(1)) {
                return -1;
            }
            f.post_send(f.ctx, peer, tag, 0, out, len, 1);
            if (!p.spin(1)) {
                return -1;
            }
        }
    }
    return rank == 0 ? (now_s() - t0) / iters : 0;
}

/// `count` messages of bufs[0].size() bytes from rank 0 to rank 1, two in flight (from
/// bufs[0] and bufs[1] in turn), then an 8-byte ack: bytes per second (rank 0), < 0 on
/// error.
inline double stream(int rank, poller& p, std::vector<uint8_t>* bufs, int count, uint64_t tag0) {
    const auto& f = p.f;
    size_t len    = bufs[0].size();
    double t0     = now_s();
    int posted = 0, done = 0;
    drivers::completion c[8];
    while (done < count) {
        while (posted < count && posted - done < 2) {
            uint8_t* b       = bufs[posted % 2].data();
            uint64_t tag     = tag0 + uint64_t(posted);
            loom_status_t st = rank == 0 ? f.post_send(f.ctx, 1, tag, 0, b, len, 0)
                                         : f.post_recv(f.ctx, 0, tag, 0, b, len, 0);
            if (st != LOOM_SUCCESS) {
                return -1;
            }
            ++posted;
        }
        done += p.poll(c, 8);
    }
    uint64_t ack = 0;
    if (rank == 0) {
        f.post_recv(f.ctx, 1, tag0 - 1, 0, &ack, 8, 0);
    } else {
        f.post_send(f.ctx, 0, tag0 - 1, 0, &ack, 8, 0);
    }
    if (!p.spin(1)) {
        return -1;
    }
    return double(len) * count / (now_s() - t0);
}

}  // namespace loom::test::pingpong
