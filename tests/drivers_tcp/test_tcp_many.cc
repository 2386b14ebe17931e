// drivers/tcp under load, with real processes: 8 ranks all-to-all with receives posted in a
// random order, half before the messages arrive and half after; and two ranks with 10,000
// small messages plus interleaved 1 MiB ones in flight on one connection in each direction,
// more than the send queue holds (NO_RESOURCE, poll, retry). Every operation must complete
// exactly once, with the right content.
#include <cstring>
#include <vector>

#include "tcp_test_util.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

// Per ordered pair, messages of these sizes: empty, small, exactly the eager limit (64 KiB),
// and a rendezvous one.
constexpr size_t a2a_sizes[] = {0, 1000, 65536, 200 * 1024};
constexpr int n_a2a_sizes    = 4;
constexpr uint64_t a2a_seed  = 20261122;

uint64_t a2a_tag(int from, int to, int m) {
    return (uint64_t(from) * 64 + uint64_t(to)) * 16 + uint64_t(m);
}

int alltoall_rank(int rank, int n, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_tcp(rank, n, job, &store, 30);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    // Receives: (peer, m) in a random order per rank.
    std::vector<std::pair<int, int>> order;
    std::vector<std::vector<uint8_t>> out, in;
    for (int p = 0; p < n; ++p) {
        for (int m = 0; m < n_a2a_sizes && p != rank; ++m) {
            order.emplace_back(p, m);
        }
    }
    test::rng gen{a2a_seed + uint64_t(rank)};
    gen.shuffle(order);
    in.resize(order.size());
    size_t n_ops = order.size() * 2;
    test::tally t(n_ops);
    size_t half    = order.size() / 2;
    auto post_recv = [&](size_t i) {
        auto [p, m] = order[i];
        in[i].assign(a2a_sizes[m], 0xee);
        uint64_t tag = a2a_tag(p, rank, m);
        return f.post_recv(f.ctx, p, tag, tag ^ 0xabc, in[i].data(), in[i].size(), i);
    };
    for (size_t i = 0; i < half; ++i) {
        RANK_CHECK(rank, post_recv(i) == 0, "recv %zu", i);
    }
    out.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        auto [p, m]  = order[i];  // reuse the shuffled list: sends also go out in random order
        uint64_t tag = a2a_tag(rank, p, m);
        out[i].resize(a2a_sizes[m]);
        test::fill(out[i].data(), out[i].size(), tag);
        RANK_CHECK(rank,
                   f.post_send(f.ctx, p, tag, tag ^ 0xabc, out[i].data(), out[i].size(),
                               order.size() + i) == 0,
                   "send %zu", i);
    }
    // Let the rest arrive early (eager copies into the pool, RTS held) before posting.
    test::poll_for(f, 0.02 + double(gen.next() % 50) * 1e-3,
                   [&](const completion& c) { t.add(c); });
    for (size_t i = half; i < order.size(); ++i) {
        RANK_CHECK(rank, post_recv(i) == 0, "recv %zu", i);
    }
    RANK_CHECK(rank, t.wait(f, n_ops, 40), "%zu of %zu operations completed", t.done, n_ops);
    for (size_t i = 0; i < order.size(); ++i) {
        auto [p, m] = order[i];
        RANK_CHECK(rank, t.status[i] == LOOM_SUCCESS, "recv from %d size %zu: status %d", p,
                   a2a_sizes[m], t.status[i]);
        long bad = test::check(in[i].data(), in[i].size(), a2a_tag(p, rank, m));
        RANK_CHECK(rank, bad < 0, "from %d size %zu: byte %ld differs", p, a2a_sizes[m], bad);
        RANK_CHECK(rank, t.status[order.size() + i] == LOOM_SUCCESS, "send %zu failed", i);
    }
    // Keep the connections up until every rank is done (a rank that leaves early says
    // goodbye, which fails nothing here but would make the log noisy).
    RANK_CHECK(rank, store.set("done/" + std::to_string(rank), "1").is_ok(), "done");
    for (int p = 0; p < n; ++p) {
        RANK_CHECK(rank, store.get("done/" + std::to_string(p), 30).is_ok(), "rank %d done", p);
    }
    test::poll_for(f, 0.01, [&](const completion& c) { t.add(c); });
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    return 0;
}

// 10,000 4-byte messages with a 1 MiB one after every 1,000th, both directions at once.
constexpr int n_small       = 10000;
constexpr int big_every     = 1000;
constexpr size_t big_bytes  = size_t{1} << 20;
constexpr int n_big         = n_small / big_every;
constexpr uint64_t big_tag0 = 1u << 20;

int in_flight_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    int peer      = 1 - rank;
    size_t n_msgs = n_small + n_big;
    test::tally t(n_msgs * 2);  // cookies: receives 0..n_msgs-1, sends after
    std::vector<uint32_t> small_out(n_small), small_in(n_small, 0xeeeeeeee);
    std::vector<std::vector<uint8_t>> big_out(n_big), big_in(n_big);
    std::vector<size_t> order(n_msgs);
    for (size_t i = 0; i < n_msgs; ++i) {
        order[i] = i;
    }
    test::rng gen{7 + uint64_t(rank)};
    gen.shuffle(order);
    auto post_recv = [&](size_t i) {
        if (i < n_small) {
            return test::recv_retry(f, t, peer, i, 1, &small_in[i], 4, i);
        }
        size_t b = i - n_small;
        big_in[b].assign(big_bytes, 0xee);
        return test::recv_retry(f, t, peer, big_tag0 + b, 2, big_in[b].data(), big_bytes, i);
    };
    for (size_t k = 0; k < n_msgs / 2; ++k) {
        RANK_CHECK(rank, post_recv(order[k]) == 0, "recv");
    }
    for (int i = 0; i < n_small; ++i) {
        small_out[size_t(i)] = uint32_t(i * 2654435761u) ^ uint32_t(rank);
        RANK_CHECK(rank,
                   test::send_retry(f, t, peer, uint64_t(i), 1, &small_out[size_t(i)], 4,
                                    n_msgs + size_t(i)) == 0,
                   "send %d", i);
        if ((i + 1) % big_every == 0) {
            size_t b = size_t(i / big_every);
            big_out[b].resize(big_bytes);
            test::fill(big_out[b].data(), big_bytes, 1000 + b + 100 * uint64_t(rank));
            RANK_CHECK(rank,
                       test::send_retry(f, t, peer, big_tag0 + b, 2, big_out[b].data(), big_bytes,
                                        n_msgs + n_small + b) == 0,
                       "big send %zu", b);
        }
    }
    for (size_t k = n_msgs / 2; k < n_msgs; ++k) {
        RANK_CHECK(rank, post_recv(order[k]) == 0, "recv");
    }
    RANK_CHECK(rank, t.wait(f, n_msgs * 2, 40), "%zu of %zu operations completed", t.done,
               n_msgs * 2);
    for (int i = 0; i < n_small; ++i) {
        uint32_t want = uint32_t(i * 2654435761u) ^ uint32_t(peer);
        RANK_CHECK(rank, t.status[size_t(i)] == 0 && small_in[size_t(i)] == want,
                   "small %d: status %d value %x", i, t.status[size_t(i)], small_in[size_t(i)]);
    }
    for (size_t b = 0; b < n_big; ++b) {
        long bad = test::check(big_in[b].data(), big_bytes, 1000 + b + 100 * uint64_t(peer));
        RANK_CHECK(rank, t.status[n_small + b] == 0 && bad < 0, "big %zu: byte %ld", b, bad);
    }
    RANK_CHECK(rank, store.set("done/" + std::to_string(rank), "1").is_ok(), "done");
    RANK_CHECK(rank, store.get("done/" + std::to_string(peer), 30).is_ok(), "peer done");
    test::poll_for(f, 0.01, [&](const completion& c) { t.add(c); });
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    return 0;
}

}  // namespace

static void eight_ranks_all_to_all(void**) {
    std::printf("# seed %llu\n", (unsigned long long)a2a_seed);
    double t0       = now_s();
    std::string why = test::run_job(
        "a2a", 8, 55, [](int r, auto& job, auto& dir) { return alltoall_rank(r, 8, job, dir); });
    std::printf("# 8-rank all-to-all: %.3f s\n", now_s() - t0);
    EXPECT_PASSED(why);
}

static void ten_thousand_messages_in_flight(void**) {
    double t0       = now_s();
    std::string why = test::run_job("flight", 2, 55, in_flight_rank);
    std::printf("# 2 x (10,000 x 4 B + 10 x 1 MiB): %.3f s\n", now_s() - t0);
    EXPECT_PASSED(why);
}

int main() {
    test::use_loopback();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_ranks_all_to_all),
        cmocka_unit_test(ten_thousand_messages_in_flight),
    };
    return LOOM_RUN_TESTS("drivers_tcp_many", tests);
}
