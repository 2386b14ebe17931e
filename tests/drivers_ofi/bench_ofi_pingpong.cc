// SPDX-License-Identifier: Apache-2.0
// Prints the 8-byte one-way latency (half the round trip) and the 64 MiB bandwidth
// (ping-pong, and a one-way stream with two messages in flight) of any driver between two
// forked processes, both busy-polling: the ofi driver over a provider beside loom's own tcp
// and shm, measured by the same code.
//
//   build/tests/drivers_ofi/bench_ofi_pingpong DRIVER [NAME=VALUE]...
//   e.g. ofi LOOM_OFI_PROVIDER='tcp;ofi_rxm' LOOM_OFI_ADDR=127.0.0.1
//        tcp LOOM_TCP_ADDR=127.0.0.1     shm     ofi LOOM_OFI_PROVIDER=shm
#include <cstdio>
#include <string>
#include <vector>

#include "../drivers/pingpong_phases.hh"
#include "../drivers_tcp/tcp_test_util.hh"
#include "base/params.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

constexpr size_t big       = size_t{64} << 20;
constexpr int small_trips  = 20000;
constexpr int big_trips    = 8;
constexpr int stream_count = 16;

std::string driver;
std::string label;  // the driver and its settings, as given

int bench_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_named(driver, "", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    test::pingpong::poller p{(*ep)->fast()};
    std::vector<uint8_t> out(big, 1), in(big, 0);
    std::vector<uint8_t> bufs[2] = {std::vector<uint8_t>(big, 2), std::vector<uint8_t>(big, 3)};
    using test::pingpong::round_trips;
    round_trips(rank, p, out.data(), in.data(), 8, 1000, 1);  // warm-up: connections, caches
    double lat = round_trips(rank, p, out.data(), in.data(), 8, small_trips, 100000);
    round_trips(rank, p, out.data(), in.data(), big, 1, 200000);  // registrations
    double trip = round_trips(rank, p, out.data(), in.data(), big, big_trips, 300000);
    double bw   = test::pingpong::stream(rank, p, bufs, stream_count, 400000);
    RANK_CHECK(rank, lat >= 0 && trip >= 0 && bw >= 0, "a phase failed");
    if (rank == 0) {
        std::printf(
            "%-40s 8 B one-way %7.2f us   64 MiB ping-pong %6.2f GB/s   stream %6.2f GB/s\n",
            label.c_str(), lat / 2 * 1e6, 2.0 * double(big) / trip / 1e9, bw / 1e9);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DRIVER [NAME=VALUE]...\n", argv[0]);
        return 2;
    }
    driver = argv[1];
    label  = driver;
    for (int i = 2; i < argc; ++i) {
        std::string arg(argv[i]);
        label += " " + arg;
        size_t eq = arg.find('=');
        status st = eq == std::string::npos
                        ? invalid_argument("not NAME=VALUE")
                        : params::registry::global().set(arg.substr(0, eq), arg.substr(eq + 1));
        if (!st.is_ok()) {
            std::fprintf(stderr, "bench_ofi_pingpong: %s: %s\n", argv[i], st.to_string().c_str());
            return 2;
        }
    }
    std::string why = test::run_job("bench", 2, 300, bench_rank);
    if (!why.empty()) {
        std::fprintf(stderr, "bench_ofi_pingpong: %s\n", why.c_str());
        return 1;
    }
    return 0;
}
