// drivers/tcp between two forked processes over 127.0.0.1: ping-pong of 0 B, 1 B, 4 KiB,
// 1 MiB and 64 MiB with content checks, with the receive posted before the message arrives
// and after (the early-arrival pool and the early rendezvous request), length and immediate
// mismatches (nothing delivered, the connection still works), control notices, and the own
// rank's loopback route.
#include <algorithm>
#include <cstring>
#include <vector>

#include "tcp_test_util.hh"
#include "test_main.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

constexpr size_t sizes[] = {0, 1, 4096, size_t{1} << 20, size_t{64} << 20};

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
        if (late) {  // the message (or its RTS) arrives first and waits for the receive
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
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<uint8_t> out(sizes[4]), in(sizes[4]);
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

// Rank 0 sends an eager and a rendezvous message that rank 1's receives do not expect
// (other length, other immediate), then a good one; a control notice; and to its own rank.
int mismatch_sender(const drivers::fast_path& f) {
    const int rank = 0;
    std::vector<uint8_t> a(100), b(size_t{1} << 20), good(5000), self_in(5000);
    test::fill(a.data(), a.size(), 1);
    test::fill(b.data(), b.size(), 2);
    test::fill(good.data(), good.size(), 3);
    test::tally t(8);
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 1, 11, a.data(), a.size(), 0) == 0, "send a");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 2, 22, b.data(), b.size(), 1) == 0, "send b");
    RANK_CHECK(rank, f.post_send(f.ctx, 1, 3, 33, good.data(), good.size(), 2) == 0, "send");
    uint64_t notice = drivers::control_tag_bit | 77;
    RANK_CHECK(rank, f.post_send(f.ctx, 1, notice, 4242, nullptr, 0, 3) == 0, "notice");
    // The own rank goes through the loopback.
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 9, 99, self_in.data(), self_in.size(), 4) == 0,
               "self recv");
    RANK_CHECK(rank, f.post_send(f.ctx, 0, 9, 99, good.data(), good.size(), 5) == 0, "self");
    RANK_CHECK(rank, t.wait(f, 5, 20), "%zu of 5 completions", t.done);
    for (int i : {0, 1, 2, 4, 5}) {  // a mismatch still completes the send with success
        RANK_CHECK(rank, t.count[size_t(i)] == 1 && t.status[size_t(i)] == LOOM_SUCCESS,
                   "cookie %d: count %d status %d", i, t.count[size_t(i)], t.status[size_t(i)]);
    }
    RANK_CHECK(rank, test::check(self_in.data(), self_in.size(), 3) < 0, "loopback content");
    test::poll_for(f, 0.1, [&](const completion& c) { t.add(c); });
    RANK_CHECK(rank, t.count[3] == 0 && t.extra == 0, "a control notice has no completion");
    return 0;
}

int mismatch_receiver(const drivers::fast_path& f) {
    const int rank = 1;
    std::vector<uint8_t> a(100, 0xee), b(size_t{1} << 20, 0xee), good(5000);
    test::tally t(8);
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 1, 11, a.data(), 99, 0) == 0, "recv a (short)");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 2, 23, b.data(), b.size(), 1) == 0, "recv b (imm)");
    RANK_CHECK(rank, f.post_recv(f.ctx, 0, 3, 33, good.data(), good.size(), 2) == 0, "recv");
    RANK_CHECK(rank, t.wait(f, 3, 20), "%zu of 3 receives", t.done);
    RANK_CHECK(rank, t.status[0] == LOOM_ERR_MISMATCH && t.last[0].imm == 11, "a: status %d",
               t.status[0]);
    RANK_CHECK(rank, t.status[1] == LOOM_ERR_MISMATCH && t.last[1].imm == 22, "b: status %d",
               t.status[1]);
    RANK_CHECK(rank, t.last[0].bytes == 0 && t.last[1].bytes == 0, "a mismatch delivers 0 bytes");
    bool untouched = std::all_of(a.begin(), a.end(), [](uint8_t x) { return x == 0xee; }) &&
                     std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0xee; });
    RANK_CHECK(rank, untouched, "a mismatched message wrote into the receive buffer");
    RANK_CHECK(rank, t.status[2] == 0 && test::check(good.data(), good.size(), 3) < 0,
               "the message after the mismatches");
    // The control notice arrives unsolicited.
    deadline until(5);
    while (t.notices.empty() && !until.expired()) {
        test::poll_for(f, 0.01, [&](const completion& c) { t.add(c); });
    }
    RANK_CHECK(rank, t.notices.size() == 1, "%zu control notices", t.notices.size());
    const completion& n = t.notices[0];
    RANK_CHECK(rank, n.peer == 0 && n.tag == (drivers::control_tag_bit | 77) && n.imm == 4242,
               "notice: peer %d tag %llx imm %llu", n.peer, (unsigned long long)n.tag,
               (unsigned long long)n.imm);
    RANK_CHECK(rank,
               f.post_recv(f.ctx, 0, drivers::control_tag_bit, 0, a.data(), 1, 7) ==
                   LOOM_ERR_INVALID_ARGUMENT,
               "a receive for a control tag is refused");
    RANK_CHECK(rank, f.post_send(f.ctx, 5, 1, 0, a.data(), 1, 7) == LOOM_ERR_INVALID_ARGUMENT,
               "a send to rank 5 of 2 is refused");
    return 0;
}

int mismatch_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_tcp(rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    return rank == 0 ? mismatch_sender((*ep)->fast()) : mismatch_receiver((*ep)->fast());
}

}  // namespace

static void pingpong_receive_posted_first(void**) {
    run_pingpong("pp_early", false);
}

static void pingpong_message_arrives_first(void**) {
    run_pingpong("pp_late", true);
}

static void mismatch_control_and_loopback(void**) {
    EXPECT_PASSED(test::run_job("mismatch", 2, 30, mismatch_rank));
}

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

int main() {
    test::use_loopback();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capabilities_describe_tcp),
        cmocka_unit_test(pingpong_receive_posted_first),
        cmocka_unit_test(pingpong_message_arrives_first),
        cmocka_unit_test(mismatch_control_and_loopback),
    };
    return LOOM_RUN_TESTS("drivers_tcp_pingpong", tests);
}
