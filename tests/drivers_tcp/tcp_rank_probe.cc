// SPDX-License-Identifier: Apache-2.0
// One rank of a tcp exchange, as its own program, so ranks can run in separate network
// namespaces (test_tcp_netns.sh): connects through a file store, sends an eager and a
// rendezvous message to every peer, checks what arrives, and prints the address it published.
//
//   tcp_rank_probe RANK SIZE STORE_DIR
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tcp_test_util.hh"

using namespace loom;

namespace {

constexpr size_t probe_sizes[] = {1000, size_t{1} << 20};

uint64_t probe_seed(int from, int to, int m) {
    return uint64_t(from) * 1000 + uint64_t(to) * 10 + uint64_t(m);
}

int run(int rank, int size, const std::string& dir) {
    test::file_store store(dir);
    auto ep = test::open_tcp(rank, size, "netns-probe", &store, 20);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    std::printf("rank %d listens on %s\n", rank, test::tcp_of(**ep)->listen_address().c_str());
    std::fflush(stdout);
    const auto& f = (*ep)->fast();
    std::vector<std::vector<uint8_t>> out, in;
    test::tally t(size_t(size) * 4);
    for (int p = 0; p < size; ++p) {
        for (int m = 0; m < 2 && p != rank; ++m) {
            out.emplace_back(probe_sizes[m]);
            in.emplace_back(probe_sizes[m]);
            test::fill(out.back().data(), probe_sizes[m], probe_seed(rank, p, m));
            uint64_t tag_in  = uint64_t(p) * 2 + uint64_t(m),
                     tag_out = uint64_t(rank) * 2 + uint64_t(m);
            RANK_CHECK(rank,
                       f.post_recv(f.ctx, p, tag_in, 0, in.back().data(), probe_sizes[m],
                                   in.size() * 2 - 2) == 0,
                       "recv");
            RANK_CHECK(rank,
                       f.post_send(f.ctx, p, tag_out, 0, out.back().data(), probe_sizes[m],
                                   out.size() * 2 - 1) == 0,
                       "send");
        }
    }
    RANK_CHECK(rank, t.wait(f, in.size() * 2, 20), "%zu of %zu operations", t.done, in.size() * 2);
    size_t k = 0;
    for (int p = 0; p < size; ++p) {
        for (int m = 0; m < 2 && p != rank; ++m, ++k) {
            RANK_CHECK(rank, t.status[k * 2] == 0 && t.status[k * 2 + 1] == 0, "status");
            long bad = test::check(in[k].data(), probe_sizes[m], probe_seed(p, rank, m));
            RANK_CHECK(rank, bad < 0, "from rank %d: byte %ld differs", p, bad);
        }
    }
    RANK_CHECK(rank, t.finish(f, store, rank, size), "not every rank is done");
    std::printf("rank %d: exchanged with %d peers\n", rank, size - 1);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: tcp_rank_probe RANK SIZE STORE_DIR\n");
        return 2;
    }
    return run(std::atoi(argv[1]), std::atoi(argv[2]), argv[3]);
}
