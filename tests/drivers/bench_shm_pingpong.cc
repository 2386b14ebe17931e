// SPDX-License-Identifier: Apache-2.0
// bench_shm_pingpong: shm driver latency and bandwidth between two processes (a program
// that prints figures, not a test).
//   8-byte ping-pong: one-way latency = round trip / 2, median and mean over --iters;
//   64 MiB transfers: rank 0 sends --reps messages, each sent when the previous completed
//   (a rendezvous send completes when the receiver has copied it), bandwidth = bytes / time;
//   the waiting side yields after 100 empty polls;
//   memcpy of 64 MiB in one process, for reference.
// Usage: bench_shm_pingpong [--iters N] [--reps N] [--cma auto|off]
// Polling spins without sleeping, as a latency benchmark must: run it on idle cores.
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/params.hh"
#include "driver_test_util.hh"

using namespace loom;
using loom::drivers::completion;

namespace {

// Latency: pure spin. Bandwidth (`yield_after` > 0): the waiting side yields after a few
// empty polls, so on a small machine it does not take the core the copying side needs.
int spin_wait(const drivers::fast_path& f, completion* c, int yield_after = 0) {
    for (int idle = 0;; ++idle) {
        int n = f.poll(f.ctx, c, 1);
        if (n > 0) {
            return c[0].status;
        }
        if (yield_after > 0 && idle > yield_after) {
            sched_yield();
        }
    }
}

int latency(int rank, const drivers::fast_path& f, int iters) {
    char sbuf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rbuf[8];
    completion c[1];
    int peer = 1 - rank, warm = std::min(iters / 10 + 1, 1000);
    std::vector<double> rtt;
    rtt.reserve(size_t(iters));
    for (int i = 0; i < warm + iters; ++i) {
        uint64_t tag = uint64_t(i) * 2;
        double t0    = now_s();
        if (rank == 0) {
            f.post_recv(f.ctx, peer, tag + 1, 0, rbuf, 8, 1);
            f.post_send(f.ctx, peer, tag, 0, sbuf, 8, 2);
            spin_wait(f, c);
            spin_wait(f, c);
        } else {
            f.post_recv(f.ctx, peer, tag, 0, rbuf, 8, 1);
            spin_wait(f, c);
            f.post_send(f.ctx, peer, tag + 1, 0, sbuf, 8, 2);
            spin_wait(f, c);
        }
        if (i >= warm) {
            rtt.push_back(now_s() - t0);
        }
    }
    if (rank == 0) {
        double sum = 0;
        for (double x : rtt) {
            sum += x;
        }
        std::sort(rtt.begin(), rtt.end());
        std::printf(
            "8-byte ping-pong: one-way latency median %.2f us, mean %.2f us (%d round "
            "trips)\n",
            rtt[rtt.size() / 2] / 2 * 1e6, sum / double(rtt.size()) / 2 * 1e6, iters);
    }
    return 0;
}

int bandwidth(int rank, const drivers::fast_path& f, int reps) {
    const size_t bytes = size_t(64) << 20;
    std::vector<char> buf(bytes, char(rank + 1));  // touched: no page faults in the timing
    completion c[1];
    double t0 = 0;
    for (int i = -1; i < reps; ++i) {  // i = -1: warm-up
        if (i == 0) {
            t0 = now_s();
        }
        if (rank == 0) {
            f.post_send(f.ctx, 1, 1000000 + uint64_t(i + 1), 0, buf.data(), bytes, 1);
        } else {
            f.post_recv(f.ctx, 0, 1000000 + uint64_t(i + 1), 0, buf.data(), bytes, 1);
        }
        if (spin_wait(f, c, 100) != LOOM_SUCCESS) {
            std::fprintf(stderr, "rank %d: transfer %d failed\n", rank, i);
            return 1;
        }
    }
    double s = now_s() - t0;
    if (rank == 0) {
        std::printf("64 MiB transfers: %.2f GB/s (%d transfers in %.3f s)\n",
                    double(bytes) * reps / s / 1e9, reps, s);
    }
    return 0;
}

void memcpy_reference() {
    const size_t bytes = size_t(64) << 20;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    std::memcpy(b.data(), a.data(), bytes);  // warm-up
    int reps  = 10;
    double t0 = now_s();
    for (int i = 0; i < reps; ++i) {
        a[size_t(i)] = char(i);
        std::memcpy(b.data(), a.data(), bytes);
    }
    double s = now_s() - t0;
    std::printf("memcpy 64 MiB in one process: %.2f GB/s\n", double(bytes) * reps / s / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
    int iters = 100000, reps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--iters") {
            iters = std::atoi(argv[i + 1]);
        } else if (a == "--reps") {
            reps = std::atoi(argv[i + 1]);
        } else if (a == "--cma") {
            if (status st = params::registry::global().set("LOOM_SHM_CMA", argv[i + 1]); !st) {
                std::fprintf(stderr, "bench_shm_pingpong: %s\n", st.to_string().c_str());
                return 2;
            }
        } else {
            std::fprintf(stderr,
                         "usage: bench_shm_pingpong [--iters N] [--reps N] "
                         "[--cma auto|off]\n");
            return 2;
        }
    }
    std::string why = test::run_job("bench", 2, 300, [&](int rank, auto& job, auto& dir) {
        test::file_store store(dir);
        auto ep = test::open_connected("shm", rank, 2, job, &store);
        if (!ep) {
            std::fprintf(stderr, "rank %d: %s\n", rank, ep.error().to_string().c_str());
            return 1;
        }
        if (rank == 0) {
            auto caps = (*ep)->capabilities();
            std::printf("shm driver: eager limit %zu bytes, single copy %s\n", caps.eager_limit,
                        caps.single_copy ? "yes (process_vm_readv)" : "no (bounce buffer)");
        }
        const auto& f = (*ep)->fast();
        int rc        = latency(rank, f, iters) | bandwidth(rank, f, reps);
        std::fflush(stdout);
        return rc;
    });
    memcpy_reference();
    if (!why.empty()) {
        std::fprintf(stderr, "bench_shm_pingpong: %s\n", why.c_str());
        return 1;
    }
    return 0;
}
