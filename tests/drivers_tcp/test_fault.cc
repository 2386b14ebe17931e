// SPDX-License-Identifier: Apache-2.0
// drivers/fault with real processes: with delay and reorder on, a two-process exchange over
// fault:tcp (and fault:shm) still delivers every message exactly once with the right
// content; drop and duplicate happen at the configured rates, are counted in fault_stats,
// and mean what they say (a dropped message never arrives, a duplicate arrives twice); a
// cancelled send the wrapper holds back goes out later from a copy, with no completion.
#include <cmath>
#include <cstring>
#include <vector>

#include "tcp_test_util.hh"
#include "test_case.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

void set_faults(const char* drop, const char* dup, const char* reorder, const char* delay_us) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_FAULT_DROP", drop).is_ok());
    assert_true(reg.set("LOOM_FAULT_DUP", dup).is_ok());
    assert_true(reg.set("LOOM_FAULT_REORDER", reorder).is_ok());
    assert_true(reg.set("LOOM_FAULT_DELAY_US", delay_us).is_ok());
}

/// Opens fault:<inner> for one rank ("tcp" or "shm") and connects it.
result<std::unique_ptr<drivers::endpoint>> open_fault(const std::string& inner, int rank,
                                                      const std::string& job, kv_store* store) {
    drivers::endpoint_config cfg = test::config_of(rank, 2, job, store, 30);
    auto ep                      = inner == "tcp" ? drivers::open_tcp(cfg) : drivers::open_shm(cfg);
    if (!ep) {
        return ep.error();
    }
    return test::connected(drivers::open_fault(std::move(ep).value(), cfg));
}

// Sizes cycle through empty, small, eager-sized and rendezvous messages.
constexpr size_t exchange_sizes[] = {0, 8, 1000, 100 * 1024};
constexpr int n_exchange          = 2000;

int exchange_rank(int rank, const std::string& inner, const std::string& job,
                  const std::string& dir) {
    file_store store(dir);
    auto ep = open_fault(inner, rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    int peer      = 1 - rank;
    std::vector<std::vector<uint8_t>> out(n_exchange), in(n_exchange);
    std::vector<size_t> order(n_exchange);
    test::tally t(2 * n_exchange);
    for (int i = 0; i < n_exchange; ++i) {
        order[size_t(i)] = size_t(i);
        size_t len       = exchange_sizes[i % 4];
        out[size_t(i)].resize(len);
        test::fill(out[size_t(i)].data(), len, uint64_t(i) * 2 + uint64_t(rank));
        in[size_t(i)].assign(len, 0xee);
    }
    test::rng gen{99 + uint64_t(rank)};
    gen.shuffle(order);
    for (int k = 0; k < n_exchange; ++k) {
        size_t i = order[size_t(k)];  // receives in random order, interleaved with sends
        RANK_CHECK(rank, test::recv_retry(f, t, peer, i, i * 3, in[i].data(), in[i].size(), i) == 0,
                   "recv %zu", i);
        RANK_CHECK(rank,
                   test::send_retry(f, t, peer, uint64_t(k), uint64_t(k) * 3, out[size_t(k)].data(),
                                    out[size_t(k)].size(), size_t(n_exchange + k)) == 0,
                   "send %d", k);
    }
    RANK_CHECK(rank, t.wait(f, 2 * n_exchange, 40), "%zu of %d operations completed", t.done,
               2 * n_exchange);
    for (int i = 0; i < n_exchange; ++i) {
        long bad = test::check(in[size_t(i)].data(), in[size_t(i)].size(),
                               uint64_t(i) * 2 + uint64_t(peer));
        RANK_CHECK(rank, t.status[size_t(i)] == 0 && bad < 0, "message %d: status %d byte %ld", i,
                   t.status[size_t(i)], bad);
        RANK_CHECK(rank, t.status[size_t(n_exchange + i)] == 0, "send %d failed", i);
    }
    RANK_CHECK(rank, t.finish(f, store, rank), "peer not done");
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    const auto* s = drivers::fault::stats_of(**ep);
    RANK_CHECK(rank, s != nullptr && s->sends == n_exchange && s->delayed == n_exchange,
               "stats: sends %llu delayed %llu", (unsigned long long)s->sends,
               (unsigned long long)s->delayed);
    RANK_CHECK(rank, s->dropped == 0 && s->duplicated == 0, "faults that were not asked for");
    // reorder 0.3: about 0.3 / 1.3 of the sends are held (a held one blocks a second hold).
    RANK_CHECK(rank, s->reordered > n_exchange / 10 && s->reordered < n_exchange / 2,
               "reordered %llu of %d", (unsigned long long)s->reordered, n_exchange);
    if (rank == 0) {
        std::printf("# fault:%s: %d messages each way, %llu reordered, all delayed\n",
                    inner.c_str(), n_exchange, (unsigned long long)s->reordered);
    }
    return 0;
}

/// Runs `body` on two ranks (a job named after `label`) with the faults given, then turns
/// every fault off again.
void run_with_faults(const char* drop, const char* dup, const char* reorder, const char* delay_us,
                     const std::string& label, const test::job_rank& body) {
    set_faults(drop, dup, reorder, delay_us);
    std::string why = test::run_job(label, 2, 55, body);
    set_faults("0", "0", "0", "0");
    EXPECT_PASSED(why);
}

void run_exchange(const std::string& inner) {
    run_with_faults("0", "0", "0.3", "200", "fx" + inner,
                    [&](int r, auto& job, auto& dir) { return exchange_rank(r, inner, job, dir); });
}

constexpr int n_rate  = 10000;
constexpr double drop = 0.1, dup = 0.05;

// Rank 0 sends n_rate 8-byte messages with drop and duplicate on; rank 1 receives what
// arrives, learns the counts, and checks them against what it saw.
int rates_sender(drivers::endpoint& ep, file_store& store) {
    const int rank = 0;
    const auto& f  = ep.fast();
    std::vector<uint64_t> buf(n_rate);
    test::tally t(n_rate);
    for (int i = 0; i < n_rate; ++i) {
        buf[size_t(i)] = uint64_t(i) * 31;
        RANK_CHECK(rank,
                   test::send_retry(f, t, 1, uint64_t(i), 0, &buf[size_t(i)], 8, size_t(i)) == 0,
                   "send %d", i);
    }
    RANK_CHECK(rank, t.wait(f, n_rate, 30), "%zu of %d sends completed", t.done, n_rate);
    for (int i = 0; i < n_rate; ++i) {  // dropped ones too: reported as sent
        RANK_CHECK(rank, t.status[size_t(i)] == 0, "send %d: status %d", i, t.status[size_t(i)]);
    }
    const auto* s      = drivers::fault::stats_of(ep);
    std::string counts = std::to_string(s->dropped) + " " + std::to_string(s->duplicated);
    RANK_CHECK(rank, store.set("counts", counts).is_ok(), "counts");
    RANK_CHECK(rank, store.get("checked", 30).is_ok(), "rank 1 never finished");
    double sd_drop = std::sqrt(n_rate * drop * (1 - drop));
    double sd_dup  = std::sqrt(n_rate * (1 - drop) * dup * (1 - dup));
    std::printf(
        "# %d sends: %llu dropped (expected %.0f +- %.0f), %llu duplicated "
        "(expected %.0f +- %.0f)\n",
        n_rate, (unsigned long long)s->dropped, n_rate * drop, sd_drop,
        (unsigned long long)s->duplicated, n_rate * (1 - drop) * dup, sd_dup);
    RANK_CHECK(rank, s->sends == n_rate, "sends %llu", (unsigned long long)s->sends);
    RANK_CHECK(rank, std::fabs(double(s->dropped) - n_rate * drop) < 5 * sd_drop, "drop rate");
    RANK_CHECK(rank, std::fabs(double(s->duplicated) - n_rate * (1 - drop) * dup) < 5 * sd_dup,
               "duplicate rate");
    return 0;
}

int rates_receiver(drivers::endpoint& ep, file_store& store) {
    const int rank = 1;
    const auto& f  = ep.fast();
    std::vector<uint64_t> buf(n_rate), again(n_rate);
    test::tally t(2 * n_rate);
    for (int i = 0; i < n_rate; ++i) {
        RANK_CHECK(rank,
                   test::recv_retry(f, t, 0, uint64_t(i), 0, &buf[size_t(i)], 8, size_t(i)) == 0,
                   "recv %d", i);
    }
    auto counts = store.get("counts", 30);
    RANK_CHECK(rank, counts.is_ok(), "no counts");
    size_t dropped = 0, duplicated = 0;
    std::sscanf(counts->c_str(), "%zu %zu", &dropped, &duplicated);
    RANK_CHECK(rank, t.wait(f, n_rate - dropped, 20), "%zu arrived, %zu sent and not dropped",
               t.done, n_rate - dropped);
    test::poll_for(f, 0.2, [&](const completion& c) { t.add(c); });
    RANK_CHECK(rank, t.done == n_rate - dropped, "%zu arrived, expected %zu", t.done,
               n_rate - dropped);
    for (int i = 0; i < n_rate; ++i) {
        RANK_CHECK(rank, t.count[size_t(i)] == 0 || buf[size_t(i)] == uint64_t(i) * 31,
                   "message %d content", i);
    }
    // A second receive for every tag takes exactly the duplicates (they wait as early
    // arrivals); the dropped tags stay silent.
    for (int i = 0; i < n_rate; ++i) {
        RANK_CHECK(rank,
                   test::recv_retry(f, t, 0, uint64_t(i), 0, &again[size_t(i)], 8,
                                    size_t(n_rate + i)) == 0,
                   "second recv %d", i);
    }
    test::poll_for(f, 0.2, [&](const completion& c) { t.add(c); });
    RANK_CHECK(rank, t.done == n_rate - dropped + duplicated, "%zu second copies, expected %zu",
               t.done - (n_rate - dropped), duplicated);
    RANK_CHECK(rank, store.set("checked", "1").is_ok(), "checked");
    return 0;
}

int rates_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = open_fault("tcp", rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    return rank == 0 ? rates_sender(**ep, store) : rates_receiver(**ep, store);
}

// Cookies: 0 = 256 KiB and 1 = 1000 B, each held back (reorder 1) and cancelled at once,
// their buffers overwritten and freed; 2 and 3 are sent normally after them; 4 (rank 1) is a
// receive nobody sends to, cancelled through the wrapper.
constexpr size_t held_lens[] = {256 * 1024, 1000, 5000, 64 * 1024 + 1};

int held_cancel_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = open_fault("tcp", rank, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    test::tally t(8);
    std::vector<std::vector<uint8_t>> buf(4);
    if (rank == 0) {
        const auto* s = drivers::fault::stats_of(**ep);
        for (size_t i = 0; i < 2; ++i) {
            buf[i].resize(held_lens[i]);
            test::fill(buf[i].data(), held_lens[i], 20 + i);
            uint64_t before = s->reordered;
            RANK_CHECK(rank, f.post_send(f.ctx, 1, 20 + i, 0, buf[i].data(), held_lens[i], i) == 0,
                       "send %zu", i);
            RANK_CHECK(rank, s->reordered == before + 1, "send %zu was not held back", i);
            RANK_CHECK(rank, f.cancel(f.ctx, i), "cancel of held send %zu", i);
            RANK_CHECK(rank, !f.cancel(f.ctx, i), "second cancel of send %zu", i);
            test::fill(buf[i].data(), held_lens[i], 50 + i);
            std::vector<uint8_t>().swap(buf[i]);  // 256 KiB: unmapped, a late read would fault
            if (i == 0) {  // released after its hold (1 ms) and sent from the copy
                test::poll_for(f, 0.01, [&](const completion& c) { t.add(c); });
                ::usleep(2000);  // at least one poll after the hold, whatever the load
                t.poll(f, 8);
            }
        }
        RANK_CHECK(rank, !f.cancel(f.ctx, 12345), "cancel of an unknown cookie");
        for (size_t i = 2; i < 4; ++i) {
            buf[i].resize(held_lens[i]);
            test::fill(buf[i].data(), held_lens[i], 20 + i);
            RANK_CHECK(rank,
                       test::send_retry(f, t, 1, 20 + i, 0, buf[i].data(), held_lens[i], i) == 0,
                       "send %zu", i);
        }
        RANK_CHECK(rank, t.wait(f, 2, 20), "%zu of 2 sends completed", t.done);
        RANK_CHECK(rank, t.count[2] == 1 && t.count[3] == 1 && t.status[2] == 0 && t.status[3] == 0,
                   "sends: %d %d", t.status[2], t.status[3]);
    } else {
        for (size_t i = 0; i < 4; ++i) {
            buf[i].assign(held_lens[i], 0xee);
            RANK_CHECK(rank,
                       test::recv_retry(f, t, 0, 20 + i, 0, buf[i].data(), held_lens[i], i) == 0,
                       "recv %zu", i);
        }
        uint8_t never[8];
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 99, 0, never, 8, 4) == 0, "recv");
        RANK_CHECK(rank, f.cancel(f.ctx, 4) && !f.cancel(f.ctx, 4), "cancel of a receive");
        // The cancelled sends still arrive, with the bytes they had when they were posted.
        RANK_CHECK(rank, t.wait(f, 4, 20), "%zu of 4 messages arrived", t.done);
        for (size_t i = 0; i < 4; ++i) {
            long bad = test::check(buf[i].data(), held_lens[i], 20 + i);
            RANK_CHECK(rank, t.status[i] == 0 && bad < 0, "message %zu: status %d byte %ld", i,
                       t.status[i], bad);
        }
        RANK_CHECK(rank, store.set("received", "1").is_ok(), "set");
    }
    RANK_CHECK(rank, t.finish(f, store, rank), "peer not done");
    // No completion ever for the cancelled operations (rank 0: sends 0 and 1; rank 1: the
    // receive 4), nor any stray one.
    int quiet = rank == 0 ? t.count[0] + t.count[1] : t.count[4];
    RANK_CHECK(rank, quiet == 0 && t.extra == 0,
               "%d completions of cancelled operations, %zu extra", quiet, t.extra);
    return 0;
}

}  // namespace

static void fault_parameters_are_checked(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_FAULT_DROP", "1.5").is_ok());
    auto c = drivers::fault::config_from_params();
    assert_false(c.is_ok());
    assert_non_null(std::strstr(c.error().message().c_str(), "LOOM_FAULT_DROP"));
    assert_true(reg.set("LOOM_FAULT_DROP", "0").is_ok());
    assert_false(reg.set("LOOM_FAULT_DELAY_US", "soon").is_ok());  // not an integer
    // A plain endpoint has no fault counters.
    drivers::endpoint_config cfg;
    auto ep = drivers::open_tcp(cfg);
    assert_true(ep.is_ok());
    assert_null(drivers::fault::stats_of(**ep));
}

int main() {
    test::use_loopback();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fault_parameters_are_checked),
        LOOM_CASE(delay_and_reorder_keep_exactly_once_over_tcp, run_exchange("tcp")),
        LOOM_CASE(delay_and_reorder_keep_exactly_once_over_shm, run_exchange("shm")),
        LOOM_CASE(drop_and_duplicate_at_configured_rates,
                  run_with_faults("0.1", "0.05", "0", "0", "frates", rates_rank)),
        LOOM_CASE(cancelled_held_send_goes_from_a_copy_without_completion,
                  run_with_faults("0", "0", "1", "0", "fcancel", held_cancel_rank)),
    };
    return LOOM_RUN_TESTS("drivers_fault", tests);
}
