// SPDX-License-Identifier: Apache-2.0
// Prints the tcp driver's 8-byte one-way latency (half the round trip) and its 64 MiB
// bandwidth (ping-pong and a one-way stream) between two forked processes over 127.0.0.1.
// Both ranks busy-poll (the driver alone), then repeat everything spinning 100 empty polls
// before sleeping on the endpoint's wait_fd() (what an idle policy can do on a shared host).
// Next to it, the same program measures plain blocking sockets (send/recv, TCP_NODELAY)
// between two processes, so the figures can be read against what this host's loopback gives
// at that moment.
//
//   build/tests/drivers_tcp/bench_tcp_pingpong [round_trips] [stream_messages]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "../drivers/pingpong_phases.hh"
#include "tcp_test_util.hh"

using namespace loom;
using loom::drivers::completion;

namespace {

constexpr size_t big = size_t{64} << 20;

struct figures {
    double small, large, bw;  // s per 8-byte round trip, s per 64 MiB round trip, bytes/s
};

figures measure(int rank, test::pingpong::poller& p, std::vector<uint8_t>* bufs, int iters,
                int stream_count, uint64_t tag0) {
    using test::pingpong::round_trips;
    uint8_t* a = bufs[0].data();
    uint8_t* b = bufs[1].data();
    round_trips(rank, p, a, b, 8, 1000, tag0);  // warm-up
    double small = round_trips(rank, p, a, b, 8, iters, tag0 + (1 << 20));
    round_trips(rank, p, a, b, big, 1, tag0 + (2 << 20));  // warm-up
    double large = round_trips(rank, p, a, b, big, 10, tag0 + (3 << 20));
    double bw    = test::pingpong::stream(rank, p, bufs, stream_count, tag0 + (4 << 20));
    return {small, large, bw};
}

void print(const char* mode, const figures& x, int iters, int stream_count) {
    std::printf("tcp over 127.0.0.1, 2 processes, %s:\n", mode);
    std::printf("  8 B one-way latency (RTT/2, %d round trips): %.2f us\n", iters,
                x.small / 2 * 1e6);
    std::printf("  64 MiB ping-pong (10 round trips): %.2f GB/s (one-way %.2f ms)\n",
                double(big) / (x.large / 2) / 1e9, x.large / 2 * 1e3);
    std::printf("  64 MiB stream (%d messages, 2 in flight): %.2f GB/s\n", stream_count,
                x.bw / 1e9);
}

int bench_rank(int rank, const std::string& job, const std::string& dir, int iters,
               int stream_count) {
    test::file_store store(dir);
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    test::pingpong::poller p{(*ep)->fast()};
    std::vector<uint8_t> bufs[2] = {std::vector<uint8_t>(big, 1), std::vector<uint8_t>(big, 2)};
    figures busy                 = measure(rank, p, bufs, iters, stream_count, 0);
    p.wait_fd                    = test::tcp_of(**ep)->wait_fd();
    figures nap                  = measure(rank, p, bufs, iters, stream_count, uint64_t{1} << 32);
    RANK_CHECK(rank, busy.small >= 0 && busy.large >= 0 && busy.bw >= 0, "a transfer failed");
    RANK_CHECK(rank, nap.small >= 0 && nap.large >= 0 && nap.bw >= 0, "a transfer failed");
    if (rank == 0) {
        print("busy polling", busy, iters, stream_count);
        print("100 empty polls, then sleep on wait_fd()", nap, iters, stream_count);
    }
    return 0;
}

void send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t k = ::send(fd, p, n, 0);
        if (k <= 0) {
            return;
        }
        p += k;
        n -= size_t(k);
    }
}

/// Blocking sockets between two processes: 8-byte round trips and `count` x 64 MiB.
void raw_baseline(int iters, int count) {
    int lfd = ::socket(AF_INET, SOCK_STREAM, 0), one = 1;
    sockaddr_in a{};
    a.sin_family      = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len     = sizeof a;
    if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 1) != 0 ||
        ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        std::perror("baseline socket");
        return;
    }
    std::vector<char> buf(big, 1);
    char b[8] = {};
    std::fflush(stdout);
    if (::fork() == 0) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        for (int i = 0; i < iters; ++i) {
            ::recv(fd, b, 8, MSG_WAITALL);
            send_all(fd, b, 8);
        }
        for (int r = 0; r < count; ++r) {
            ::recv(fd, buf.data(), big, MSG_WAITALL);
        }
        send_all(fd, b, 1);
        ::_exit(0);
    }
    int fd = ::accept(lfd, nullptr, nullptr);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double t0 = now_s();
    for (int i = 0; i < iters; ++i) {
        send_all(fd, b, 8);
        ::recv(fd, b, 8, MSG_WAITALL);
    }
    double t1 = now_s();
    for (int r = 0; r < count; ++r) {
        send_all(fd, buf.data(), big);
    }
    ::recv(fd, b, 1, MSG_WAITALL);
    double t2 = now_s();
    ::wait(nullptr);
    ::close(fd);
    ::close(lfd);
    std::printf("plain blocking sockets, same host, same moment:\n");
    std::printf("  8 B one-way latency (RTT/2): %.2f us\n", (t1 - t0) / iters / 2 * 1e6);
    std::printf("  64 MiB stream (%d messages): %.2f GB/s\n", count,
                double(big) * count / (t2 - t1) / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
    int iters        = argc > 1 ? std::atoi(argv[1]) : 20000;
    int stream_count = argc > 2 ? std::atoi(argv[2]) : 32;
    test::use_loopback();
    std::string why = test::run_job("bench_tcp", 2, 300, [&](int r, auto& job, auto& dir) {
        return bench_rank(r, job, dir, iters, stream_count);
    });
    if (!why.empty()) {
        std::fprintf(stderr, "bench_tcp_pingpong: %s\n", why.c_str());
        return 1;
    }
    raw_baseline(iters, stream_count);
    return 0;
}
