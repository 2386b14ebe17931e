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
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "tcp_test_util.hh"

using namespace loom;
using loom::drivers::completion;

namespace {

constexpr size_t big = size_t{64} << 20;

/// Where a waiting rank sleeps when `wait_fd` >= 0: after 100 empty polls it blocks in
/// poll(2) on the endpoint's wait_fd() (1 ms at most), as an engine's idle policy could.
int g_wait_fd = -1;

/// One poll; in the sleeping mode, the 100th empty one in a row sleeps on wait_fd().
int poll_once(const drivers::fast_path& f, completion* c, int max) {
    static int idle = 0;
    int n           = f.poll(f.ctx, c, max);
    idle            = n > 0 ? 0 : idle + 1;
    if (g_wait_fd >= 0 && idle > 100) {
        pollfd pfd{g_wait_fd, POLLIN, 0};
        ::poll(&pfd, 1, 1);
        idle = 0;
    }
    return n;
}

/// Polls until `want` completions came.
bool spin(const drivers::fast_path& f, int want, double timeout_s = 30) {
    deadline until(timeout_s);
    completion c[8];
    int got = 0;
    while (got < want) {
        int n = poll_once(f, c, 8);
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

/// `iters` round trips of `len` bytes; returns seconds per round trip (rank 0) or 0.
double pingpong(int rank, const drivers::fast_path& f, uint8_t* out, uint8_t* in, size_t len,
                int iters, uint64_t tag0) {
    int peer  = 1 - rank;
    double t0 = now_s();
    for (int i = 0; i < iters; ++i) {
        uint64_t tag = tag0 + uint64_t(i);
        if (rank == 0) {
            f.post_recv(f.ctx, peer, tag, 0, in, len, 0);
            f.post_send(f.ctx, peer, tag, 0, out, len, 1);
            if (!spin(f, 2)) {
                return -1;
            }
        } else {
            f.post_recv(f.ctx, peer, tag, 0, in, len, 0);
            if (!spin(f, 1)) {
                return -1;
            }
            f.post_send(f.ctx, peer, tag, 0, out, len, 1);
            if (!spin(f, 1)) {
                return -1;
            }
        }
    }
    return (now_s() - t0) / iters;
}

/// `count` messages of 64 MiB from rank 0 to rank 1, two in flight, then an 8-byte ack;
/// returns bytes per second (rank 0).
double stream(int rank, const drivers::fast_path& f, std::vector<uint8_t>* bufs, int count,
              uint64_t tag0) {
    double t0  = now_s();
    int posted = 0, done = 0;
    completion c[8];
    while (done < count) {
        while (posted < count && posted - done < 2) {
            uint8_t* b       = bufs[posted % 2].data();
            loom_status_t st = rank == 0 ? f.post_send(f.ctx, 1, tag0 + posted, 0, b, big, 0)
                                         : f.post_recv(f.ctx, 0, tag0 + posted, 0, b, big, 0);
            if (st != LOOM_SUCCESS) {
                return -1;
            }
            ++posted;
        }
        done += poll_once(f, c, 8);
    }
    uint64_t ack = 0;
    if (rank == 0) {
        f.post_recv(f.ctx, 1, tag0 - 1, 0, &ack, 8, 0);
    } else {
        f.post_send(f.ctx, 0, tag0 - 1, 0, &ack, 8, 0);
    }
    if (!spin(f, 1)) {
        return -1;
    }
    return double(big) * count / (now_s() - t0);
}

struct figures {
    double small, large, bw;  // s per 8-byte round trip, s per 64 MiB round trip, bytes/s
};

figures measure(int rank, const drivers::fast_path& f, std::vector<uint8_t>* bufs, int iters,
                int stream_count, uint64_t tag0) {
    pingpong(rank, f, bufs[0].data(), bufs[1].data(), 8, 1000, tag0);  // warm-up
    double small = pingpong(rank, f, bufs[0].data(), bufs[1].data(), 8, iters, tag0 + (1 << 20));
    pingpong(rank, f, bufs[0].data(), bufs[1].data(), big, 1, tag0 + (2 << 20));  // warm-up
    double large = pingpong(rank, f, bufs[0].data(), bufs[1].data(), big, 10, tag0 + (3 << 20));
    double bw    = stream(rank, f, bufs, stream_count, tag0 + (4 << 20));
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
    const auto& f                = (*ep)->fast();
    std::vector<uint8_t> bufs[2] = {std::vector<uint8_t>(big, 1), std::vector<uint8_t>(big, 2)};
    figures busy                 = measure(rank, f, bufs, iters, stream_count, 0);
    g_wait_fd                    = test::tcp_of(**ep)->wait_fd();
    figures nap                  = measure(rank, f, bufs, iters, stream_count, uint64_t{1} << 32);
    RANK_CHECK(rank, busy.small > 0 && busy.large > 0 && busy.bw > 0, "a transfer failed");
    RANK_CHECK(rank, nap.small > 0 && nap.large > 0 && nap.bw > 0, "a transfer failed");
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
