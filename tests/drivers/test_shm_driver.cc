// drivers/shm with real processes: ping-pong of every size class (eager edges, rendezvous,
// 64 MiB) over CMA and over the bounce buffer, 8-rank all-to-all with receives posted
// before and after arrival in random order, tag matching (not FIFO), mismatches that
// deliver nothing, control notices, and back-pressure under thousands of early messages.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/params.hh"
#include "driver_test_util.hh"
#include "drivers/shm/shm_params.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

// Rank `rank` of a 2-rank ping-pong: rank 0 sends size bytes, rank 1 checks and answers
// with another pattern, rank 0 checks the answer.
int pingpong_rank(int rank, const std::string& job, const std::string& dir, bool single_copy) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    auto caps     = (*ep)->capabilities();
    const auto& f = (*ep)->fast();
    RANK_CHECK(rank, caps.single_copy == single_copy, "single_copy %d", int(caps.single_copy));
    size_t e = caps.eager_limit;
    std::vector<size_t> sizes{0, 1, 8, e - 1, e, e + 1, 4096, 65536, 1 << 20, size_t(64) << 20};
    std::vector<char> sbuf(sizes.back()), rbuf(sizes.back());
    completion c[2];
    for (size_t k = 0; k < sizes.size(); ++k) {
        size_t n      = sizes[k];
        uint64_t ping = 2 * k, pong = 2 * k + 1;
        if (rank == 0) {
            test::fill(sbuf.data(), n, ping);
            RANK_CHECK(rank, f.post_recv(f.ctx, 1, pong, n, rbuf.data(), n, 1) == 0, "recv");
            RANK_CHECK(rank, f.post_send(f.ctx, 1, ping, n, sbuf.data(), n, 2) == 0, "send");
            RANK_CHECK(rank, test::wait_completions(f, c, 2, 20) == 2, "size %zu: timeout", n);
            RANK_CHECK(rank, c[0].status == 0 && c[1].status == 0, "size %zu: status", n);
            long bad = test::check(rbuf.data(), n, pong);
            RANK_CHECK(rank, bad < 0, "size %zu: byte %ld of the answer differs", n, bad);
        } else {
            RANK_CHECK(rank, f.post_recv(f.ctx, 0, ping, n, rbuf.data(), n, 1) == 0, "recv");
            RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "size %zu: timeout", n);
            RANK_CHECK(rank,
                       c[0].status == 0 && c[0].bytes == n && c[0].tag == ping && c[0].imm == n &&
                           c[0].peer == 0,
                       "size %zu: completion status %d bytes %zu", n, int(c[0].status), c[0].bytes);
            long bad = test::check(rbuf.data(), n, ping);
            RANK_CHECK(rank, bad < 0, "size %zu: byte %ld differs", n, bad);
            test::fill(sbuf.data(), n, pong);
            RANK_CHECK(rank, f.post_send(f.ctx, 0, pong, n, sbuf.data(), n, 2) == 0, "send");
            RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "size %zu: send", n);
            RANK_CHECK(rank, c[0].status == 0 && c[0].bytes == n, "size %zu: send status", n);
        }
    }
    RANK_CHECK(rank, !f.pending(f.ctx), "operations left pending");
    return 0;
}

}  // namespace

static void pingpong_every_size_class_cma(void**) {
    EXPECT_PASSED(test::run_job("pp", 2, 50, [](int r, auto& job, auto& dir) {
        return pingpong_rank(r, job, dir, /*single_copy=*/true);
    }));
}

static void pingpong_every_size_class_bounce(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_CMA", "off").is_ok());
    assert_true(reg.set("LOOM_SHM_BOUNCE_BYTES", "65536").is_ok());  // many laps of the ring
    std::string why = test::run_job("ppb", 2, 50, [](int r, auto& job, auto& dir) {
        return pingpong_rank(r, job, dir, /*single_copy=*/false);
    });
    assert_true(reg.set("LOOM_SHM_CMA", "auto").is_ok());
    assert_true(reg.set("LOOM_SHM_BOUNCE_BYTES", "1048576").is_ok());
    EXPECT_PASSED(why);
}

namespace {

// Rank 0 withdraws a rendezvous send before rank 1 reads it, and a posted receive; then
// overwrites the send buffer. Rank 1's read of the withdrawn message completes as
// withdrawn (nothing valid delivered) and later messages arrive intact: the ring, the
// ack words and the bounce channel stay in step. No completion ever names a cancelled op.
int cancel_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f    = (*ep)->fast();
    const size_t big = size_t(4) << 20, small = 100, after = size_t(2) << 20;
    std::vector<char> a(big), b(small), d(after), flag(8);
    completion c[4];
    enum : uint64_t {
        t_big   = 10,
        t_small = 11,
        t_never = 12,
        t_go    = 13,
        t_after = 14,
        t_done  = 15
    };
    if (rank == 0) {
        test::fill(a.data(), big, 1);
        test::fill(b.data(), small, 2);
        test::fill(d.data(), after, 3);
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_big, big, a.data(), big, 100) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_small, small, b.data(), small, 101) == 0, "send");
        RANK_CHECK(rank, f.post_recv(f.ctx, 1, t_never, 8, flag.data(), 8, 102) == 0, "recv");
        RANK_CHECK(rank, f.cancel(f.ctx, 100), "the rendezvous send was not pending");
        RANK_CHECK(rank, !f.cancel(f.ctx, 101), "an eager send completes at once");
        RANK_CHECK(rank, f.cancel(f.ctx, 102), "the posted receive was not pending");
        RANK_CHECK(rank, !f.cancel(f.ctx, 100) && !f.cancel(f.ctx, 999), "cancelled twice");
        test::fill(a.data(), big, 77);  // the caller reuses its buffer at once
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_go, 0, nullptr, 0, 103) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, t_after, after, d.data(), after, 104) == 0, "send");
        RANK_CHECK(rank, f.post_recv(f.ctx, 1, t_done, 0, nullptr, 0, 105) == 0, "recv");
        int seen = 0;
        deadline until(20);
        while (seen < 4 && !until.expired()) {
            int n = test::wait_completions(f, c, 1, until.remaining_s());
            if (n == 1) {
                RANK_CHECK(rank, c[0].cookie == 101 || c[0].cookie >= 103,
                           "completion for cancelled op %llu", (unsigned long long)c[0].cookie);
                RANK_CHECK(rank, c[0].status == 0, "status %d", int(c[0].status));
                ++seen;
            }
        }
        RANK_CHECK(rank, seen == 4, "%d of 4 completions", seen);
        // The withdrawn send is released once rank 1 has seen the revocation.
        deadline drain(5);
        while (f.pending(f.ctx) && !drain.expired()) {
            RANK_CHECK(rank, f.poll(f.ctx, c, 4) == 0, "late completion");
        }
        RANK_CHECK(rank, !f.pending(f.ctx), "the revoked send is never released");
    } else {
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_go, 0, nullptr, 0, 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1 && c[0].status == 0, "go");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_big, big, a.data(), big, 2) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "withdrawn receive");
        RANK_CHECK(rank, c[0].status == LOOM_ERR_PEER_FAILURE && c[0].withdrawn,
                   "status %d withdrawn %d", int(c[0].status), int(c[0].withdrawn));
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_small, small, b.data(), small, 3) == 0, "recv");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, t_after, after, d.data(), after, 4) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 2, 20) == 2, "later messages");
        RANK_CHECK(rank, c[0].status == 0 && c[1].status == 0, "later status");
        RANK_CHECK(rank, test::check(b.data(), small, 2) < 0, "eager message corrupted");
        RANK_CHECK(rank, test::check(d.data(), after, 3) < 0, "later message corrupted");
        RANK_CHECK(rank, f.post_send(f.ctx, 0, t_done, 0, nullptr, 0, 5) == 0, "send");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "done");
    }
    return 0;
}

void run_cancel(const char* label) {
    EXPECT_PASSED(test::run_job(label, 2, 50, cancel_rank));
}

}  // namespace

static void cancel_withdraws_sends_and_receives_cma(void**) {
    run_cancel("cxc");
}

static void cancel_withdraws_sends_and_receives_bounce(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_CMA", "off").is_ok());
    run_cancel("cxb");
    assert_true(reg.set("LOOM_SHM_CMA", "auto").is_ok());
}

namespace {

struct a2a_msg {
    int src, dst, k;
    size_t len;
    uint64_t tag() const { return (uint64_t(k) << 16) | (uint64_t(src) << 8) | uint64_t(dst); }
    uint64_t seed() const { return tag() * 7 + 1; }
};

// Every rank sends kMsgs messages of mixed sizes to every other rank and receives theirs:
// half the receives are posted before the sends (in random order), the rest after a pause
// in which messages arrive early.
int alltoall_rank(int rank, int n, const std::string& job, const std::string& dir, unsigned seed) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, n, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f          = (*ep)->fast();
    size_t e               = (*ep)->capabilities().eager_limit;
    const size_t sizes[]   = {0, 8, e, e + 1, 20000, 300000};
    constexpr int per_pair = 6;
    std::vector<a2a_msg> sends, recvs;
    for (int p = 0; p < n; ++p) {
        for (int k = 0; p != rank && k < per_pair; ++k) {
            sends.push_back({rank, p, k, sizes[(k + rank + p) % per_pair]});
            recvs.push_back({p, rank, k, sizes[(k + rank + p) % per_pair]});
        }
    }
    std::mt19937 rng(seed + unsigned(rank));
    std::shuffle(sends.begin(), sends.end(), rng);
    std::shuffle(recvs.begin(), recvs.end(), rng);
    std::vector<std::vector<char>> sbuf(sends.size()), rbuf(recvs.size());
    size_t half    = recvs.size() / 2;
    auto post_recv = [&](size_t i) {
        rbuf[i].assign(recvs[i].len, 0);
        return f.post_recv(f.ctx, recvs[i].src, recvs[i].tag(), recvs[i].len, rbuf[i].data(),
                           recvs[i].len, 1000000 + i);
    };
    for (size_t i = 0; i < half; ++i) {
        RANK_CHECK(rank, post_recv(i) == LOOM_SUCCESS, "post_recv");
    }
    for (size_t i = 0; i < sends.size(); ++i) {
        sbuf[i].resize(sends[i].len);
        test::fill(sbuf[i].data(), sends[i].len, sends[i].seed());
        RANK_CHECK(rank,
                   f.post_send(f.ctx, sends[i].dst, sends[i].tag(), sends[i].len, sbuf[i].data(),
                               sends[i].len, i) == LOOM_SUCCESS,
                   "post_send");
    }
    std::vector<completion> got;
    got.reserve(sends.size() + recvs.size());
    test::poll_for(f, 0.05, [&](const completion& c) { got.push_back(c); });
    for (size_t i = half; i < recvs.size(); ++i) {
        RANK_CHECK(rank, post_recv(i) == LOOM_SUCCESS, "post_recv");
    }
    size_t want = sends.size() + recvs.size(), had = got.size();
    got.resize(want);
    int more = test::wait_completions(f, got.data() + had, int(want - had), 30);
    RANK_CHECK(rank, size_t(more) == want - had, "%d of %zu completions missing",
               int(want - had) - more, want);
    for (const completion& c : got) {
        RANK_CHECK(rank, c.status == LOOM_SUCCESS, "cookie %llu: status %d",
                   (unsigned long long)c.cookie, int(c.status));
        if (c.cookie < 1000000) {
            continue;  // a send
        }
        const a2a_msg& m = recvs[c.cookie - 1000000];
        RANK_CHECK(rank, c.peer == m.src && c.tag == m.tag() && c.imm == m.len && c.bytes == m.len,
                   "completion for tag %#llx from %d: peer %d bytes %zu",
                   (unsigned long long)m.tag(), m.src, c.peer, c.bytes);
        long bad = test::check(rbuf[c.cookie - 1000000].data(), m.len, m.seed());
        RANK_CHECK(rank, bad < 0, "message k=%d from rank %d: byte %ld differs", m.k, m.src, bad);
    }
    RANK_CHECK(rank, !f.pending(f.ctx), "operations left pending");
    return 0;
}

}  // namespace

static void alltoall_8_ranks_random_order(void**) {
    unsigned seed = unsigned(now_s() * 1000);
    std::printf("# alltoall seed %u\n", seed);
    std::string why = test::run_job("a2a", 8, 50, [&](int r, auto& job, auto& dir) {
        return alltoall_rank(r, 8, job, dir, seed);
    });
    if (!why.empty()) {
        LOOM_FAIL(why + " (seed " + std::to_string(seed) + ")");
    }
}

namespace {

constexpr int tag_msgs = 40;

size_t tag_test_len(int k, size_t eager) {
    return k % 5 == 0 ? 50000 + size_t(k) : (k % 3 == 0 ? eager : size_t(k) * 10);
}

// Rank 0 sends tags 0..39 in order, then four messages that must mismatch, then a control
// notice. Rank 1 receives the 40 in reverse order after they all arrived.
int tags_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    size_t e      = (*ep)->capabilities().eager_limit;
    std::vector<std::vector<char>> bufs(tag_msgs + 4);
    std::vector<char> big(100000, 'z');
    completion c[tag_msgs + 8];
    const uint64_t notice = drivers::control_tag_bit | 77;
    if (rank == 0) {
        for (int k = 0; k < tag_msgs; ++k) {
            bufs[k].resize(tag_test_len(k, e));
            test::fill(bufs[k].data(), bufs[k].size(), 500 + k);
            RANK_CHECK(rank,
                       f.post_send(f.ctx, 1, 900 + k, 1, bufs[k].data(), bufs[k].size(), k) == 0,
                       "send %d", k);
        }
        // Mismatches: eager too long, rendezvous too short, eager and rendezvous wrong imm.
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 2000, 5, big.data(), 100, 100) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 2001, 5, big.data(), 100000, 101) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 2002, 6, big.data(), 100, 102) == 0, "send");
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 2003, 6, big.data(), 100000, 103) == 0, "send");
        RANK_CHECK(rank,
                   f.post_send(f.ctx, 1, notice, 0xfeed, nullptr, 0, drivers::control_cookie) == 0,
                   "notice");
        RANK_CHECK(rank, store.set("sent", "1").is_ok(), "store");
        int n = test::wait_completions(f, c, tag_msgs + 4, 20);
        RANK_CHECK(rank, n == tag_msgs + 4, "only %d sends completed", n);
        for (int i = 0; i < n; ++i) {
            RANK_CHECK(rank, c[i].status == 0 && c[i].cookie != drivers::control_cookie,
                       "send %llu", (unsigned long long)c[i].cookie);
        }
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 0.1) == 0, "a completion for a notice");
        return 0;
    }
    RANK_CHECK(rank, store.get("sent", 20).is_ok(), "rank 0 never sent");
    int notices = 0;
    test::poll_for(f, 0.05, [&](const completion& x) {
        notices += x.cookie == drivers::control_cookie && x.tag == notice && x.imm == 0xfeed &&
                   x.peer == 0;
    });
    for (int k = tag_msgs - 1; k >= 0; --k) {
        bufs[k].assign(tag_test_len(k, e), 0);
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 900 + k, 1, bufs[k].data(), bufs[k].size(), k) == 0,
                   "recv %d", k);
    }
    for (int k = 0; k < 4; ++k) {
        bufs[tag_msgs + k].assign(100000, 'z');
    }
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2000, 5, bufs[40].data(), 50, 40) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2001, 5, bufs[41].data(), 99999, 41) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2002, 5, bufs[42].data(), 100, 42) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2003, 5, bufs[43].data(), 100000, 43) == 0, "recv");
    int n = test::wait_completions(f, c, tag_msgs + 4, 20);
    RANK_CHECK(rank, n == tag_msgs + 4, "only %d receives completed", n);
    for (int i = 0; i < n; ++i) {
        auto k = int(c[i].cookie);
        if (k >= tag_msgs) {
            RANK_CHECK(rank, c[i].status == LOOM_ERR_MISMATCH && c[i].bytes == 0,
                       "tag %d: status %d", 2000 + k - tag_msgs, int(c[i].status));
            RANK_CHECK(rank, c[i].imm == (k >= tag_msgs + 2 ? 6u : 5u), "imm reported");
            continue;
        }
        RANK_CHECK(rank, c[i].status == 0 && c[i].tag == uint64_t(900 + k), "tag %d", k);
        long bad = test::check(bufs[k].data(), bufs[k].size(), 500 + k);
        RANK_CHECK(rank, bad < 0, "tag %d got another message (byte %ld)", 900 + k, bad);
    }
    for (int k = tag_msgs; k < tag_msgs + 4; ++k) {
        bool untouched =
            std::all_of(bufs[k].begin(), bufs[k].end(), [](char x) { return x == 'z'; });
        RANK_CHECK(rank, untouched, "a mismatched message wrote into receive %d", k);
    }
    RANK_CHECK(rank, notices == 1, "%d control notices", notices);
    return 0;
}

}  // namespace

static void tags_matched_not_fifo_mismatch_and_notice(void**) {
    EXPECT_PASSED(test::run_job("tags", 2, 50, tags_rank));
}

namespace {

constexpr int bp_msgs = 5000;

// Rank 0 posts 5000 sends (every 500th a rendezvous) while rank 1 polls without posting:
// only ring + early pool can complete, the rest wait. Then rank 1 posts every receive in
// random order and everything arrives intact.
int backpressure_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_connected("shm", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    auto len      = [](int k) { return k % 500 == 0 ? size_t(10000) : size_t(64); };
    std::vector<std::vector<char>> bufs(bp_msgs);
    std::vector<completion> c(bp_msgs);
    if (rank == 0) {
        for (int k = 0; k < bp_msgs; ++k) {
            bufs[k].resize(len(k));
            test::fill(bufs[k].data(), len(k), 7000 + k);
            RANK_CHECK(rank, f.post_send(f.ctx, 1, k, 0, bufs[k].data(), len(k), k) == 0, "send");
        }
        int early     = test::wait_completions(f, c.data(), bp_msgs, 0.3);
        int64_t slots = drivers::shm::params::ring_slots.get();
        int64_t bound = slots + drivers::shm::params::unexpected.get();
        RANK_CHECK(rank, early >= slots - 1 && early <= bound,
                   "%d sends completed while the receiver posted nothing (bound %lld)", early,
                   (long long)bound);
        RANK_CHECK(rank, store.set("stalled", std::to_string(early)).is_ok(), "store");
        int rest = test::wait_completions(f, c.data() + early, bp_msgs - early, 30);
        RANK_CHECK(rank, early + rest == bp_msgs, "only %d sends completed", early + rest);
        return 0;
    }
    test::poll_for(f, 0.3, [&](const completion&) {});
    RANK_CHECK(rank, store.get("stalled", 20).is_ok(), "rank 0 never stalled");
    std::vector<int> order(bp_msgs);
    for (int k = 0; k < bp_msgs; ++k) {
        order[k] = k;
    }
    std::shuffle(order.begin(), order.end(), std::mt19937(3));
    for (int k : order) {
        bufs[k].assign(len(k), 0);
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, k, 0, bufs[k].data(), len(k), k) == 0, "recv");
    }
    int n = test::wait_completions(f, c.data(), bp_msgs, 30);
    RANK_CHECK(rank, n == bp_msgs, "only %d receives completed", n);
    for (int i = 0; i < n; ++i) {
        int k = int(c[i].cookie);
        RANK_CHECK(rank, c[i].status == 0, "receive %d: status %d", k, int(c[i].status));
        RANK_CHECK(rank, test::check(bufs[k].data(), len(k), 7000 + k) < 0, "message %d", k);
    }
    return 0;
}

}  // namespace

static void backpressure_thousands_of_early_messages(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_SHM_MAX_OPS", "8192").is_ok());
    std::string why = test::run_job("bp", 2, 55, backpressure_rank);
    assert_true(reg.set("LOOM_SHM_MAX_OPS", "4096").is_ok());
    EXPECT_PASSED(why);
}

LOOM_TEST_MAIN("drivers_shm", cmocka_unit_test(pingpong_every_size_class_cma),
               cmocka_unit_test(pingpong_every_size_class_bounce),
               cmocka_unit_test(alltoall_8_ranks_random_order),
               cmocka_unit_test(tags_matched_not_fifo_mismatch_and_notice),
               cmocka_unit_test(backpressure_thousands_of_early_messages),
               cmocka_unit_test(cancel_withdraws_sends_and_receives_cma),
               cmocka_unit_test(cancel_withdraws_sends_and_receives_bounce))
