// SPDX-License-Identifier: Apache-2.0
// Built, not registered: two forked ranks over shm datagram links run the reliable protocol
// and print the 8-byte half round trip and the 4 MiB one-way bandwidth (rank 1 acknowledges
// each message with an empty one), clean and with the given drop probability.
// Usage: bench_reliable_pingpong [DROP]   (e.g. 0.01)
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "reliable_test_util.hh"

using namespace loom;
using loom::drivers::completion;

namespace {

int bench_rank(int rank, const std::string& job, const std::string& dir, double drop) {
    test::file_store store(dir);
    test::rel_setup s;
    s.faults.drop = drop;
    auto ep       = test::open_rel(rank, 2, job, &store, s);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp = (*ep)->fast();
    int peer       = 1 - rank;
    completion c[4];
    // Spins (a yield now and then): a nap per wait would measure the nap, not the protocol.
    auto one = [&] {
        deadline until(30);
        int got = 0;
        for (uint64_t spins = 0; got == 0 && !until.expired(); ++spins) {
            got = fp.poll(fp.ctx, c, 1);
            if (got == 0 && spins % 256 == 255) {
                ::sched_yield();
            }
        }
        RANK_CHECK(rank, got == 1, "no completion");
        RANK_CHECK(rank, c[0].status == LOOM_SUCCESS, "status %d", c[0].status);
        return 0;
    };
    uint64_t small      = 0;
    constexpr int iters = 20000;
    double t0           = now_s();
    for (int i = 0; i < iters; ++i) {
        uint64_t tag = uint64_t(i) * 2;
        if (rank == 0) {
            RANK_CHECK(rank, fp.post_recv(fp.ctx, peer, tag + 1, 0, &small, 8, 1) == 0, "recv");
            RANK_CHECK(rank, fp.post_send(fp.ctx, peer, tag, 0, &small, 8, 2) == 0, "send");
        } else {
            RANK_CHECK(rank, fp.post_recv(fp.ctx, peer, tag, 0, &small, 8, 1) == 0, "recv");
            if (one() != 0) {
                return 1;
            }
            RANK_CHECK(rank, fp.post_send(fp.ctx, peer, tag + 1, 0, &small, 8, 2) == 0, "send");
        }
        for (int k = rank == 0 ? 2 : 1; k > 0; --k) {
            if (one() != 0) {
                return 1;
            }
        }
    }
    double lat           = (now_s() - t0) / iters / 2;
    constexpr size_t big = 4u << 20;
    constexpr int reps   = 50;
    std::vector<uint8_t> buf(big, 7);
    t0 = now_s();
    for (int i = 0; i < reps; ++i) {
        uint64_t tag = 1000000 + uint64_t(i) * 2;
        if (rank == 0) {
            RANK_CHECK(rank, fp.post_recv(fp.ctx, peer, tag + 1, 0, nullptr, 0, 1) == 0, "r");
            RANK_CHECK(rank, fp.post_send(fp.ctx, peer, tag, 0, buf.data(), big, 2) == 0, "s");
            for (int k = 0; k < 2; ++k) {
                if (one() != 0) {
                    return 1;
                }
            }
        } else {
            RANK_CHECK(rank, fp.post_recv(fp.ctx, peer, tag, 0, buf.data(), big, 1) == 0, "r");
            if (one() != 0) {
                return 1;
            }
            RANK_CHECK(rank, fp.post_send(fp.ctx, peer, tag + 1, 0, nullptr, 0, 2) == 0, "s");
            if (one() != 0) {
                return 1;
            }
        }
    }
    double secs = now_s() - t0;
    if (rank == 0) {
        const auto* st = drivers::reliable::stats_of(**ep);
        std::printf(
            "drop %.3f: 8 B half round trip %.2f us; 4 MiB %.0f MB/s; %llu frames sent, "
            "%llu retransmitted on a timer, %llu fast, %llu probes\n",
            drop, lat * 1e6, double(big) * reps / secs / 1e6, (unsigned long long)st->frames_sent,
            (unsigned long long)st->retransmits, (unsigned long long)st->fast_retransmits,
            (unsigned long long)st->probes);
    }
    (*ep)->close();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    double drop = argc > 1 ? std::atof(argv[1]) : 0;
    std::string problems =
        test::run_job("relbench", 2, 300, [&](int r, const std::string& j, const std::string& d) {
            return bench_rank(r, j, d, drop);
        });
    if (!problems.empty()) {
        std::fprintf(stderr, "bench_reliable_pingpong: %s\n", problems.c_str());
        return 1;
    }
    return 0;
}
