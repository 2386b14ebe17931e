// SPDX-License-Identifier: Apache-2.0
// The reliable tagged endpoint's contract (drivers/driver.hh), one source run over each
// transport, as one set of conformance tests serves every provider. Arguments: the driver's
// registry name (shm, tcp, fault:shm, ...), then NAME=VALUE parameters set before the tests
// (the transport's own settings, such as shm's bounce buffer), and `single_copy=0|1` where
// capabilities() must say so, and `wake=0` where the transport has no waker (its waker cases
// skip, saying so). With real processes: ping-pong of every size class (eager
// edges, rendezvous, 64 MiB) with the receive posted first and with the message first; tags
// matched, not FIFO; mismatches by length and by imm that deliver nothing and leave the
// stream in step; control notices; the own rank's loopback route; 8-rank all-to-all with
// receives posted before and after arrival in random order; and 10,000 small messages with
// 1 MiB ones among them in flight each way at once, more than the driver queues (retry on
// NO_RESOURCE); and a peer that closes its endpoint. Every operation completes exactly once.
// The waker (drivers/waker.hh): a rank sleeping on its endpoint is woken within milliseconds,
// not at the timeout, by its peer's eager send, by the receiver's answer to its rendezvous
// send, and by a ring from a thread of its own process (work handed over).
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "../drivers_tcp/tcp_test_util.hh"
#include "base/params.hh"
#include "test_case.hh"
#include "wake_test_util.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

std::string transport;        // the registry name under test
int want_single_copy = -1;    // what capabilities() must say; -1: not checked
bool has_waker       = true;  // wake=0: the transport offers none (callers nap)

result<std::unique_ptr<drivers::endpoint>> open_rank(int rank, int size, const std::string& job,
                                                     kv_store* store) {
    return test::open_named(transport, "", rank, size, job, store);
}

/// One round trip of `len` bytes: rank 0 sends seed `tag`, rank 1 checks and answers with
/// seed `tag + 1000`. `late`: the receiver reads the message in before posting its receive.
int round_trip(int rank, const drivers::fast_path& f, size_t len, uint64_t tag, bool late,
               std::vector<uint8_t>& out, std::vector<uint8_t>& in) {
    int peer         = 1 - rank;
    uint64_t my_seed = rank == 0 ? tag : tag + 1000, their_seed = rank == 0 ? tag + 1000 : tag;
    test::fill(out.data(), len, my_seed);
    std::memset(in.data(), 0xee, len);
    test::tally t(4);
    if (rank == 1) {
        if (late) {  // the message (or its rendezvous request) arrives first and waits
            test::poll_for(f, 0.05, [&](const completion& c) { t.add(c); });
        }
        RANK_CHECK(rank, f.post_recv(f.ctx, peer, tag, tag * 7, in.data(), len, 0) == 0, "recv");
        RANK_CHECK(rank, t.wait(f, 1, 30), "size %zu: no message", len);
        RANK_CHECK(rank, t.status[0] == LOOM_SUCCESS, "size %zu: status %d", len, t.status[0]);
        const completion& c = t.last[0];
        RANK_CHECK(rank, c.bytes == len && c.peer == 0 && c.tag == tag && c.imm == tag * 7,
                   "size %zu: completion bytes %zu peer %d tag %llu imm %llu", len, c.bytes, c.peer,
                   (unsigned long long)c.tag, (unsigned long long)c.imm);
        long bad = test::check(in.data(), len, their_seed);
        RANK_CHECK(rank, bad < 0, "size %zu: byte %ld differs", len, bad);
        RANK_CHECK(rank, f.post_send(f.ctx, peer, tag + 1, 0, out.data(), len, 1) == 0, "send");
        RANK_CHECK(rank, t.wait(f, 2, 30) && t.status[1] == LOOM_SUCCESS, "size %zu: echo", len);
        RANK_CHECK(rank, t.last[1].bytes == len, "size %zu: send reports %zu", len,
                   t.last[1].bytes);
        return 0;
    }
    RANK_CHECK(rank, f.post_recv(f.ctx, peer, tag + 1, 0, in.data(), len, 0) == 0, "recv");
    RANK_CHECK(rank, f.post_send(f.ctx, peer, tag, tag * 7, out.data(), len, 1) == 0, "send");
    RANK_CHECK(rank, t.wait(f, 2, 30), "size %zu: %zu of 2 completions", len, t.done);
    RANK_CHECK(rank, t.status[0] == 0 && t.status[1] == 0, "size %zu: %d %d", len, t.status[0],
               t.status[1]);
    RANK_CHECK(rank, t.last[1].bytes == len, "send completion reports %zu bytes", t.last[1].bytes);
    long bad = test::check(in.data(), len, their_seed);
    RANK_CHECK(rank, bad < 0, "size %zu: echoed byte %ld differs", len, bad);
    return 0;
}

int pingpong_rank(int rank, const std::string& job, const std::string& dir, bool late) {
    file_store store(dir);
    auto ep = open_rank(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    auto caps     = (*ep)->capabilities();
    const auto& f = (*ep)->fast();
    RANK_CHECK(rank, want_single_copy < 0 || caps.single_copy == bool(want_single_copy),
               "single_copy %d", int(caps.single_copy));
    size_t e = caps.eager_limit;
    const size_t sizes[]{0, 1, 8, e - 1, e, e + 1, 4096, 65536, 1 << 20, size_t(64) << 20};
    std::vector<uint8_t> out(size_t(64) << 20), in(size_t(64) << 20);
    uint64_t tag = 10;
    for (size_t len : sizes) {
        double t0 = now_s();
        if (round_trip(rank, f, len, tag, late, out, in) != 0) {
            return 1;
        }
        if (rank == 0) {
            std::printf("# %s receive: %zu bytes round trip in %.3f ms\n", late ? "late" : "early",
                        len, (now_s() - t0) * 1e3);
        }
        tag += 2;
    }
    RANK_CHECK(rank, !f.pending(f.ctx), "operations still pending");
    return 0;
}

void run_pingpong(const char* label, bool late) {
    EXPECT_PASSED(test::run_job(label, 2, 50, [&](int r, auto& job, auto& dir) {
        return pingpong_rank(r, job, dir, late);
    }));
}

}  // namespace

namespace {

constexpr int tag_msgs = 40;
// Receive indices after the 40 tagged messages: four mismatches, then one good message.
constexpr int after_mismatch = tag_msgs + 4;
constexpr uint64_t notice    = drivers::control_tag_bit | 77;

size_t tag_test_len(int k, size_t eager) {
    return k % 5 == 0 ? 50000 + size_t(k) : (k % 3 == 0 ? eager : size_t(k) * 10);
}

// Rank 0 sends tags 0..39 in order, four messages that must mismatch, a good one after them,
// a control notice, and one message to itself. Rank 1 receives the 40 in reverse order after
// they all arrived.
int tags_sender(const drivers::fast_path& f, size_t e, kv_store& store) {
    const int rank = 0;
    std::vector<std::vector<char>> bufs(tag_msgs);
    std::vector<char> big(100000, 'z'), good(5000), self_in(5000);
    completion c[tag_msgs + 8];
    for (int k = 0; k < tag_msgs; ++k) {
        bufs[k].resize(tag_test_len(k, e));
        test::fill(bufs[k].data(), bufs[k].size(), 500 + k);
        RANK_CHECK(rank, f.post_send(f.ctx, 1, 900 + k, 1, bufs[k].data(), bufs[k].size(), k) == 0,
                   "send %d", k);
    }
    // Mismatches: eager too long, rendezvous too short, eager and rendezvous wrong imm.
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2000, 5, big.data(), 100, 100) == 0, "send");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2001, 5, big.data(), 100000, 101) == 0, "send");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2002, 6, big.data(), 100, 102) == 0, "send");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2003, 6, big.data(), 100000, 103) == 0, "send");
    test::fill(good.data(), good.size(), 3);
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2004, 33, good.data(), good.size(), 104) == 0, "send");
    RANK_CHECK(rank,
               f.post_send(f.ctx, 1, notice, 0xfeed, nullptr, 0, drivers::control_cookie) == 0,
               "notice");
    // The own rank goes through the loopback.
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 9, 99, self_in.data(), self_in.size(), 105) == 0,
               "self recv");
    RANK_CHECK(rank, f.post_send(f.ctx, 0, 9, 99, good.data(), good.size(), 106) == 0, "self");
    RANK_CHECK(rank, store.set("sent", "1").is_ok(), "store");
    // A mismatch still completes the send with success.
    int n = test::wait_completions(f, c, tag_msgs + 7, 20);
    RANK_CHECK(rank, n == tag_msgs + 7, "only %d sends completed", n);
    for (int i = 0; i < n; ++i) {
        RANK_CHECK(rank, c[i].status == 0 && c[i].cookie != drivers::control_cookie, "send %llu",
                   (unsigned long long)c[i].cookie);
    }
    RANK_CHECK(rank, test::check(self_in.data(), self_in.size(), 3) < 0, "loopback content");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 0.1) == 0, "a completion for a notice");
    return 0;
}

int tags_receiver(const drivers::fast_path& f, size_t e, kv_store& store) {
    const int rank = 1;
    std::vector<std::vector<char>> bufs(after_mismatch + 1);
    completion c[tag_msgs + 8];
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
    bufs[after_mismatch].assign(5000, 0);
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2000, 5, bufs[40].data(), 50, 40) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2001, 5, bufs[41].data(), 99999, 41) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2002, 5, bufs[42].data(), 100, 42) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2003, 5, bufs[43].data(), 100000, 43) == 0, "recv");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2004, 33, bufs[44].data(), 5000, 44) == 0, "recv");
    int n = test::wait_completions(f, c, after_mismatch + 1, 20);
    RANK_CHECK(rank, n == after_mismatch + 1, "only %d receives completed", n);
    for (int i = 0; i < n; ++i) {
        auto k = int(c[i].cookie);
        if (k >= tag_msgs && k < after_mismatch) {
            RANK_CHECK(rank, c[i].status == LOOM_ERR_MISMATCH && c[i].bytes == 0,
                       "tag %d: status %d", 2000 + k - tag_msgs, int(c[i].status));
            RANK_CHECK(rank, c[i].imm == (k >= tag_msgs + 2 ? 6u : 5u), "imm reported");
            continue;
        }
        uint64_t want_tag = k == after_mismatch ? 2004 : uint64_t(900 + k);
        RANK_CHECK(rank, c[i].status == 0 && c[i].tag == want_tag, "tag %d", k);
        long bad = test::check(bufs[k].data(), bufs[k].size(), k == after_mismatch ? 3 : 500 + k);
        RANK_CHECK(rank, bad < 0, "tag %llu got another message (byte %ld)",
                   (unsigned long long)want_tag, bad);
    }
    for (int k = tag_msgs; k < after_mismatch; ++k) {
        bool untouched =
            std::all_of(bufs[k].begin(), bufs[k].end(), [](char x) { return x == 'z'; });
        RANK_CHECK(rank, untouched, "a mismatched message wrote into receive %d", k);
    }
    RANK_CHECK(rank, notices == 1, "%d control notices", notices);
    char x = 0;
    RANK_CHECK(
        rank,
        f.post_recv(f.ctx, 0, drivers::control_tag_bit, 0, &x, 1, 7) == LOOM_ERR_INVALID_ARGUMENT,
        "a receive for a control tag is refused");
    RANK_CHECK(rank, f.post_send(f.ctx, 5, 1, 0, &x, 1, 7) == LOOM_ERR_INVALID_ARGUMENT,
               "a send to rank 5 of 2 is refused");
    return 0;
}

int tags_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = open_rank(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    size_t e = (*ep)->capabilities().eager_limit;
    int rc =
        rank == 0 ? tags_sender((*ep)->fast(), e, store) : tags_receiver((*ep)->fast(), e, store);
    if (rc != 0) {
        return rc;
    }
    test::tally t(1);  // only for the closing handshake
    RANK_CHECK(rank, t.finish((*ep)->fast(), store, rank), "peer not done");
    return 0;
}

}  // namespace

namespace {

struct a2a_msg {
    int src, dst, k;
    size_t len;
    uint64_t tag() const { return (uint64_t(k) << 16) | (uint64_t(src) << 8) | uint64_t(dst); }
    uint64_t seed() const { return tag() * 7 + 1; }
};

// Every rank sends messages of mixed sizes (empty, small, the eager edges, rendezvous) to
// every other rank and receives theirs: half the receives are posted before the sends (in
// random order), the rest after a pause in which messages arrive early. Every operation
// completes exactly once.
int alltoall_rank(int rank, int n, const std::string& job, const std::string& dir, unsigned seed) {
    file_store store(dir);
    auto ep = open_rank(rank, n, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f          = (*ep)->fast();
    size_t e               = (*ep)->capabilities().eager_limit;
    const size_t sizes[]   = {0, 8, 1000, e, e + 1, 20000, 200 * 1024, 300000};
    constexpr int per_pair = 8;
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
    test::tally t(recvs.size() + sends.size());  // cookies: receives, then sends
    size_t half    = recvs.size() / 2;
    auto post_recv = [&](size_t i) {
        rbuf[i].assign(recvs[i].len, 0);
        return f.post_recv(f.ctx, recvs[i].src, recvs[i].tag(), recvs[i].len, rbuf[i].data(),
                           recvs[i].len, i);
    };
    for (size_t i = 0; i < half; ++i) {
        RANK_CHECK(rank, post_recv(i) == LOOM_SUCCESS, "post_recv");
    }
    for (size_t i = 0; i < sends.size(); ++i) {
        sbuf[i].resize(sends[i].len);
        test::fill(sbuf[i].data(), sends[i].len, sends[i].seed());
        RANK_CHECK(rank,
                   f.post_send(f.ctx, sends[i].dst, sends[i].tag(), sends[i].len, sbuf[i].data(),
                               sends[i].len, recvs.size() + i) == LOOM_SUCCESS,
                   "post_send");
    }
    test::poll_for(f, 0.05, [&](const completion& c) { t.add(c); });
    for (size_t i = half; i < recvs.size(); ++i) {
        RANK_CHECK(rank, post_recv(i) == LOOM_SUCCESS, "post_recv");
    }
    RANK_CHECK(rank, t.wait(f, t.count.size(), 40), "%zu of %zu operations completed", t.done,
               t.count.size());
    for (size_t i = 0; i < t.count.size(); ++i) {
        RANK_CHECK(rank, t.status[i] == LOOM_SUCCESS, "cookie %zu: status %d", i, t.status[i]);
        if (i >= recvs.size()) {
            continue;  // a send
        }
        const a2a_msg& m    = recvs[i];
        const completion& c = t.last[i];
        RANK_CHECK(rank, c.peer == m.src && c.tag == m.tag() && c.imm == m.len && c.bytes == m.len,
                   "completion for tag %#llx from %d: peer %d bytes %zu",
                   (unsigned long long)m.tag(), m.src, c.peer, c.bytes);
        long bad = test::check(rbuf[i].data(), m.len, m.seed());
        RANK_CHECK(rank, bad < 0, "message k=%d from rank %d: byte %ld differs", m.k, m.src, bad);
    }
    RANK_CHECK(rank, !f.pending(f.ctx), "operations left pending");
    // Keep the connections up until every rank is done (a rank that leaves early says
    // goodbye, which fails nothing here but would make the log noisy).
    RANK_CHECK(rank, t.finish(f, store, rank, n), "not every rank is done");
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    return 0;
}

}  // namespace

static void alltoall_8_ranks_random_order(void**) {
    unsigned seed = unsigned(now_s() * 1000);
    std::printf("# alltoall seed %u\n", seed);
    double t0       = now_s();
    std::string why = test::run_job("a2a", 8, 55, [&](int r, auto& job, auto& dir) {
        return alltoall_rank(r, 8, job, dir, seed);
    });
    std::printf("# 8-rank all-to-all: %.3f s\n", now_s() - t0);
    if (!why.empty()) {
        LOOM_FAIL(why + " (seed " + std::to_string(seed) + ")");
    }
}

namespace {

// 10,000 4-byte messages with a 1 MiB one after every 1,000th, both directions at once.
constexpr int n_small       = 10000;
constexpr int big_every     = 1000;
constexpr size_t big_bytes  = size_t{1} << 20;
constexpr int n_big         = n_small / big_every;
constexpr uint64_t big_tag0 = 1u << 20;

int in_flight_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = open_rank(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    int peer      = 1 - rank;
    size_t n_msgs = n_small + n_big;
    test::tally t(n_msgs * 2);  // cookies: receives 0..n_msgs-1, sends after
    std::vector<uint32_t> small_out(n_small), small_in(n_small, 0xeeeeeeee);
    std::vector<std::vector<uint8_t>> big_out(n_big), big_in(n_big);
    std::vector<size_t> order(n_msgs);
    std::iota(order.begin(), order.end(), 0);
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
    RANK_CHECK(rank, t.finish(f, store, rank), "peer not done");
    RANK_CHECK(rank, t.extra == 0, "%zu extra completions", t.extra);
    return 0;
}

}  // namespace

static void ten_thousand_messages_in_flight(void**) {
    double t0       = now_s();
    std::string why = test::run_job("flight", 2, 55, in_flight_rank);
    std::printf("# 2 x (10,000 x 4 B + 10 x 1 MiB): %.3f s\n", now_s() - t0);
    EXPECT_PASSED(why);
}

namespace {

// Rank 1 closes its endpoint once rank 0 has posted a receive toward it, and stays alive:
// the receive fails with PEER_FAILURE soon after (tcp also says why).
int closed_peer_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = open_rank(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    char b        = 0;
    if (rank == 1) {
        RANK_CHECK(rank, store.get("posted", 10).is_ok(), "rank 0 never posted");
        (*ep)->close();
        ::sleep(2);  // alive, but its endpoint is gone
        return 0;
    }
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 1, 0, &b, 1, 0) == 0, "recv");
    RANK_CHECK(rank, store.set("posted", "1").is_ok(), "posted");
    double t0 = now_s();
    test::tally t(1);
    RANK_CHECK(rank, t.wait(f, 1, 5), "no completion");
    RANK_CHECK(rank, t.status[0] == LOOM_ERR_PEER_FAILURE, "status %d", t.status[0]);
    RANK_CHECK(rank, now_s() - t0 < 1.5, "took %.3f s", now_s() - t0);
    if (drivers::tcp::tcp_endpoint* tcp = test::tcp_of(**ep)) {
        const std::string& m = tcp->peer_status(1).message();
        RANK_CHECK(rank, m.find("peer 1 closed its endpoint") != std::string::npos, "%s",
                   m.c_str());
    }
    return 0;
}

}  // namespace

namespace {

using test::wake::hold_s;
using test::wake::late_s;
using test::wake::sleep_timeout_ns;
using test::wake::sleep_until_completion;

// Rank 1 sleeps on a receive; rank 0 sends after hold_s.
int eager_rank(const std::string& driver, int rank, drivers::endpoint& ep) {
    return test::wake::eager_rounds(ep, driver, rank);
}

// Rank 0 sends a large message and sleeps until it completes; rank 1 posts the receive
// after hold_s: the completion follows the receiver's acknowledgement, not the timeout.
int rendezvous_rank(const std::string& driver, int rank, drivers::endpoint& ep) {
    const auto& f = ep.fast();
    size_t n      = size_t(4) << 20;  // beyond every eager limit
    std::vector<char> buf(n);
    completion c[1];
    double posted = 0;
    if (rank == 1) {
        test::sleep_s(hold_s);
        posted = now_s();
        // The post time goes back in a small message, so rank 0 can tell how late it woke.
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 1, 0, buf.data(), n, 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "recv completion");
        RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].bytes == n, "recv status");
        RANK_CHECK(rank, f.post_send(f.ctx, 0, 2, 0, &posted, sizeof posted, 2) == 0, "send");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "send completion");
        return 0;
    }
    test::fill(buf.data(), n, 3);
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 1, 0, buf.data(), n, 1) == 0, "send");
    int sleeps = 0;
    RANK_CHECK(rank, sleep_until_completion(ep, c, &sleeps) == 1, "no completion");
    double done = now_s();
    RANK_CHECK(rank, c[0].status == LOOM_SUCCESS && c[0].cookie == 1, "send status");
    RANK_CHECK(rank, f.post_recv(f.ctx, 1, 2, 0, &posted, sizeof posted, 2) == 0, "recv");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "recv completion");
    RANK_CHECK(rank, sleeps >= 1, "the sender never slept");
    RANK_CHECK(rank, done - posted < late_s, "woken %.1f ms after the receive was posted",
               (done - posted) * 1e3);
    std::printf("# %s rendezvous: woken %.3f ms after the receive was posted (%d sleeps)\n",
                driver.c_str(), (done - posted) * 1e3, sleeps);
    return 0;
}

// Rank 1 sleeps with nothing posted; a thread of its own rings its waker after hold_s.
// Rank 0 waits for rank 1's last message, so no closing connection wakes the sleeper.
int self_ring_rank(const std::string& driver, int rank, drivers::endpoint& ep) {
    const auto& f = ep.fast();
    completion c[1];
    int done = 0;
    if (rank == 0) {
        RANK_CHECK(rank, f.post_recv(f.ctx, 1, 9, 0, &done, sizeof done, 1) == 0, "recv");
        RANK_CHECK(rank, test::wait_completions(f, c, 1, 60) == 1, "recv completion");
        return 0;
    }
    drivers::waker w = ep.idle_waker();
    RANK_CHECK(rank, w.ring != nullptr, "%s offers no ring", driver.c_str());
    for (int round = 0; round < 3; ++round) {
        double rung        = 0;
        uint64_t token     = w.arm(w.ctx);
        std::thread ringer = std::thread([&] {
            test::sleep_s(hold_s);
            rung = now_s();
            w.ring(w.ctx);
        });
        double slept       = now_s();
        w.sleep(w.ctx, token, sleep_timeout_ns);
        double woke = now_s();
        ringer.join();
        RANK_CHECK(rank, woke - slept >= hold_s * 0.9, "round %d: woken before the ring", round);
        RANK_CHECK(rank, woke - rung < late_s, "round %d: woken %.1f ms after the ring", round,
                   (woke - rung) * 1e3);
        std::printf("# %s self ring round %d: woken %.3f ms after the ring\n", driver.c_str(),
                    round, (woke - rung) * 1e3);
    }
    RANK_CHECK(rank, f.post_send(f.ctx, 0, 9, 0, &done, sizeof done, 2) == 0, "send");
    RANK_CHECK(rank, test::wait_completions(f, c, 1, 20) == 1, "send completion");
    return 0;
}

// Runs `body` on two ranks, each with its endpoint connected.
void run_wake(int (*body)(const std::string&, int, drivers::endpoint&)) {
    EXPECT_PASSED(test::run_job("wake", 2, 60, [&](int rank, auto& job, auto& dir) {
        file_store store(dir);
        auto ep = open_rank(rank, 2, job, &store);
        RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
        return body(transport, rank, **ep);
    }));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DRIVER [NAME=VALUE|single_copy=0|1|wake=0|1]...\n",
                     argv[0]);
        return 2;
    }
    transport = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string arg(argv[i]);
        size_t eq = arg.find('=');
        if (eq == std::string::npos) {
            std::fprintf(stderr, "not NAME=VALUE: %s\n", argv[i]);
            return 2;
        }
        if (arg.substr(0, eq) == "single_copy") {
            want_single_copy = std::atoi(arg.c_str() + eq + 1);
        } else if (arg.substr(0, eq) == "wake") {
            has_waker = std::atoi(arg.c_str() + eq + 1) != 0;
        } else if (status st =
                       params::registry::global().set(arg.substr(0, eq), arg.substr(eq + 1));
                   !st.is_ok()) {
            std::fprintf(stderr, "%s: %s\n", argv[i], st.to_string().c_str());
            return 2;
        }
    }
    std::vector<CMUnitTest> tests = {
        LOOM_CASE(pingpong_receive_posted_first, run_pingpong("pp_early", false)),
        LOOM_CASE(pingpong_message_arrives_first, run_pingpong("pp_late", true)),
        LOOM_CASE(tags_matched_not_fifo_mismatch_notice_and_loopback,
                  EXPECT_PASSED(test::run_job("tags", 2, 50, tags_rank))),
        cmocka_unit_test(alltoall_8_ranks_random_order),
        cmocka_unit_test(ten_thousand_messages_in_flight),
        LOOM_CASE(closed_peer_fails_pending_operations,
                  EXPECT_PASSED(test::run_job("closed", 2, 30, closed_peer_rank))),
    };
    const CMUnitTest wake_tests[] = {
        LOOM_CASE(eager_send_wakes_the_sleeper, run_wake(eager_rank)),
        // shm: the ack word rings; tcp: the clear-to-send arrives on the socket.
        LOOM_CASE(rendezvous_answer_wakes_the_sleeping_sender, run_wake(rendezvous_rank)),
        LOOM_CASE(ring_wakes_the_own_sleeper, run_wake(self_ring_rank)),
    };
    if (has_waker) {
        tests.insert(tests.end(), std::begin(wake_tests), std::end(wake_tests));
    } else {
        // Not run, so never counted as passed; the plan says how many cases ran.
        std::printf("# SKIP %zu waker cases: %s offers no waker here (wake=0), callers nap\n",
                    std::size(wake_tests), transport.c_str());
    }
    return test::run_group(("drivers_contract " + transport).c_str(), tests.data(), tests.size());
}
