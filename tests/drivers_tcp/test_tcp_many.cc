// drivers/tcp where its behaviour is its own (the endpoint contract every driver keeps is
// tests/drivers/test_driver_contract.cc, run over tcp): what capabilities() says, and two
// ranks with 10,000 small messages plus interleaved 1 MiB ones in flight on one connection
// in each direction, more than the send queue holds (NO_RESOURCE, poll, retry). Every
// operation must complete exactly once, with the right content.
#include <cstring>
#include <vector>

#include "tcp_test_util.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

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

static void capabilities_describe_tcp(void**) {
    drivers::endpoint_config cfg;
    auto ep = drivers::open_tcp(cfg);
    assert_true(ep.is_ok());
    drivers::caps c = (*ep)->capabilities();
    assert_string_equal(c.name, "tcp");
    assert_true(c.single_copy && c.detects_peer_death);
    assert_int_equal(c.eager_limit, 65536);
    assert_true((*ep)->connect().is_ok());  // one rank: nothing to connect
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
        cmocka_unit_test(capabilities_describe_tcp),
        cmocka_unit_test(ten_thousand_messages_in_flight),
    };
    return LOOM_RUN_TESTS("drivers_tcp_many", tests);
}
