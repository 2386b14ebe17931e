// SPDX-License-Identifier: Apache-2.0
// drivers/reliable between real processes over shm datagram links (a full mesh, the lower
// rank listening): ping-pong of 0 B to 4 MiB with the receive posted first and with the
// message first; 4 ranks with hundreds of messages in flight between every pair (early
// buffers run out, streams pause and resume); mismatch by imm and by length, eager and
// rendezvous (nothing delivered, the stream stays in step); control tags; cancel; the same
// traffic under 1 % and 10 % loss, duplicates and reordering from the fault injector, every
// byte checked; frames with another job's key, a bad checksum, cut short or from a rank
// outside the job, dropped and counted with results unchanged; a peer killed (SIGKILL) or
// stopped (SIGSTOP) mid-transfer: the survivor's operations complete with PEER_FAILURE
// within the timeout and its log names the peer; a caller away longer than the timeout does
// not fail its peer. Last, the shared-link shape (a router on the other end): three ranks as
// threads, one link each to an in-process router that drops frames.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "base/params.hh"
#include "reliable_test_util.hh"
#include "test_case.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;
using loom::test::hostile;
using loom::test::rel_setup;
namespace rel = loom::drivers::reliable;

namespace {

constexpr size_t pp_sizes[] = {0,     1,     8,     1000,   8151,     8152,    8153,
                               16384, 16385, 65536, 100000, 1u << 20, 4u << 20};
constexpr int n_sizes       = int(sizeof pp_sizes / sizeof pp_sizes[0]);

/// Completions by cookie, kept across calls: what a timed poll collects is not lost to a
/// later wait.
std::map<uint64_t, completion> seen;

/// Polls for `seconds`, keeping every completion in `seen`.
void poll_keep(const drivers::fast_path& fp, double seconds) {
    test::poll_for(fp, seconds, [](const completion& c) { seen[c.cookie] = c; });
}

/// The completions of `want`, polled until every one came (now or before) or the time is
/// up; the others that come meanwhile are appended to `others`.
std::map<uint64_t, completion> wait_cookies(const drivers::fast_path& fp,
                                            const std::vector<uint64_t>& want, double timeout_s,
                                            std::vector<completion>* others = nullptr) {
    std::map<uint64_t, completion> got;
    auto pick = [&] {
        for (uint64_t k : want) {
            if (auto it = seen.find(k); it != seen.end()) {
                got[k] = it->second;
                seen.erase(it);
            }
        }
    };
    pick();
    deadline until(timeout_s);
    test::backoff idle;
    completion c[32];
    while (got.size() < want.size() && !until.expired()) {
        int n = fp.poll(fp.ctx, c, 32);
        for (int i = 0; i < n; ++i) {
            seen[c[i].cookie] = c[i];
            if (others != nullptr &&
                std::find(want.begin(), want.end(), c[i].cookie) == want.end()) {
                others->push_back(c[i]);
            }
        }
        pick();
        n > 0 ? idle.reset() : idle.idle();
    }
    return got;
}

/// Two ranks: rank 0 sends every size to rank 1, which checks it and sends it back changed;
/// first with each receive posted before its message (a zero-byte "ready" first), then with
/// each message there before its receive.
int pingpong_rank(int rank, const std::string& job, const std::string& dir, const rel_setup& s) {
    file_store store(dir);
    auto ep = test::open_rel(rank, 2, job, &store, s);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp = (*ep)->fast();
    int peer       = 1 - rank;
    std::vector<uint8_t> out(4u << 20), in(4u << 20);
    uint64_t cookie = 1;
    for (int mode = 0; mode < 2; ++mode) {
        bool recv_first = mode == 0;
        for (int i = 0; i < n_sizes; ++i) {
            size_t len   = pp_sizes[i];
            uint64_t tag = uint64_t(mode * 100 + i) * 4;  // A = tag, echo = tag+1, ready = tag+2
            std::fill(in.begin(), in.begin() + long(len), uint8_t(0xee));
            if (rank == 0) {
                test::fill(out.data(), len, tag);
                uint64_t c_echo = cookie++, c_send = cookie++, c_ready = cookie++;
                if (recv_first) {
                    RANK_CHECK(rank,
                               fp.post_recv(fp.ctx, peer, tag + 1, 7, in.data(), len, c_echo) ==
                                   LOOM_SUCCESS,
                               "post echo");
                    RANK_CHECK(
                        rank,
                        fp.post_recv(fp.ctx, peer, tag + 2, 0, nullptr, 0, c_ready) == LOOM_SUCCESS,
                        "post ready");
                    auto r = wait_cookies(fp, {c_ready}, 30);
                    RANK_CHECK(rank, r.size() == 1, "no ready for size %zu", len);
                }
                RANK_CHECK(
                    rank,
                    fp.post_send(fp.ctx, peer, tag, 5, out.data(), len, c_send) == LOOM_SUCCESS,
                    "post send");
                if (!recv_first) {
                    poll_keep(fp, 0.02);
                    RANK_CHECK(rank,
                               fp.post_recv(fp.ctx, peer, tag + 1, 7, in.data(), len, c_echo) ==
                                   LOOM_SUCCESS,
                               "post echo");
                }
                std::vector<completion> others;
                auto r = wait_cookies(fp, {c_send, c_echo}, 60, &others);
                RANK_CHECK(rank, r.size() == 2, "size %zu mode %d: %zu of 2 completions", len, mode,
                           r.size());
                RANK_CHECK(rank, r[c_send].status == LOOM_SUCCESS, "send status %d",
                           r[c_send].status);
                RANK_CHECK(rank, r[c_echo].status == LOOM_SUCCESS && r[c_echo].bytes == len,
                           "echo status %d bytes %zu", r[c_echo].status, r[c_echo].bytes);
                long bad = test::check(in.data(), len, tag + 1);
                RANK_CHECK(rank, bad < 0, "size %zu mode %d: echo differs at %ld", len, mode, bad);
            } else {
                uint64_t c_recv = cookie++, c_ready = cookie++, c_echo = cookie++;
                std::vector<uint64_t> want = {c_recv};
                if (recv_first) {
                    RANK_CHECK(
                        rank,
                        fp.post_recv(fp.ctx, peer, tag, 5, in.data(), len, c_recv) == LOOM_SUCCESS,
                        "post recv");
                    RANK_CHECK(
                        rank,
                        fp.post_send(fp.ctx, peer, tag + 2, 0, nullptr, 0, c_ready) == LOOM_SUCCESS,
                        "post ready");
                    want.push_back(c_ready);
                } else {
                    poll_keep(fp, 0.02);
                    RANK_CHECK(
                        rank,
                        fp.post_recv(fp.ctx, peer, tag, 5, in.data(), len, c_recv) == LOOM_SUCCESS,
                        "post recv");
                }
                auto r = wait_cookies(fp, want, 60);
                RANK_CHECK(rank, r.size() == want.size(), "size %zu mode %d: no message", len,
                           mode);
                RANK_CHECK(rank,
                           r[c_recv].status == LOOM_SUCCESS && r[c_recv].bytes == len &&
                               r[c_recv].imm == 5 && r[c_recv].tag == tag,
                           "recv status %d bytes %zu", r[c_recv].status, r[c_recv].bytes);
                long bad = test::check(in.data(), len, tag);
                RANK_CHECK(rank, bad < 0, "size %zu mode %d: differs at %ld", len, mode, bad);
                test::fill(out.data(), len, tag + 1);
                RANK_CHECK(
                    rank,
                    fp.post_send(fp.ctx, peer, tag + 1, 7, out.data(), len, c_echo) == LOOM_SUCCESS,
                    "post echo");
                r = wait_cookies(fp, {c_echo}, 60);
                RANK_CHECK(rank, r.size() == 1 && r[c_echo].status == LOOM_SUCCESS,
                           "echo send did not complete");
            }
        }
    }
    const rel::reliable_stats* st = rel::stats_of(**ep);
    RANK_CHECK(rank, st != nullptr, "no stats");
    std::printf(
        "# rank %d: sent %llu frames (%llu data), %llu retransmits, %llu fast, %llu acks, "
        "%llu dups, %llu held, %llu stalls, %llu link full; dropped: key %llu, csum "
        "%llu, truncated %llu, rank %llu, stale %llu\n",
        rank, (unsigned long long)st->frames_sent, (unsigned long long)st->data_frames_sent,
        (unsigned long long)st->retransmits, (unsigned long long)st->fast_retransmits,
        (unsigned long long)st->acks_sent, (unsigned long long)st->duplicates,
        (unsigned long long)st->held_out_of_order, (unsigned long long)st->stalls,
        (unsigned long long)st->link_full, (unsigned long long)st->bad_key,
        (unsigned long long)st->bad_checksum, (unsigned long long)st->truncated,
        (unsigned long long)st->unknown_rank, (unsigned long long)st->stale);
    if (s.faults.drop > 0) {
        RANK_CHECK(rank, st->retransmits + st->fast_retransmits + st->probes > 0,
                   "loss without retransmits");
    }
    if (s.faults.dup > 0) {
        RANK_CHECK(rank, st->duplicates > 0, "duplicates injected, none seen");
    }
    if (s.faults.reorder > 0) {
        RANK_CHECK(rank, st->held_out_of_order > 0, "reordering injected, none seen");
    }
    switch (s.bad) {
        case hostile::wrong_key:
            RANK_CHECK(rank, st->bad_key > 0, "no wrong-key frame counted");
            break;
        case hostile::bad_checksum:
            RANK_CHECK(rank, st->bad_checksum > 0, "no bad-checksum frame counted");
            break;
        case hostile::truncated:
            RANK_CHECK(rank, st->truncated > 0, "no truncated frame counted");
            break;
        case hostile::unknown_rank:
            RANK_CHECK(rank, st->unknown_rank > 0, "no unknown-rank frame counted");
            break;
        case hostile::none:
            break;
    }
    (*ep)->close();
    return 0;
}

void run_pingpong(const rel_setup& s) {
    EXPECT_PASSED(test::run_job("relpp", 2, 240,
                                [&](int rank, const std::string& job, const std::string& dir) {
                                    return pingpong_rank(rank, job, dir, s);
                                }));
}

rel_setup faults(double drop, double dup, double reorder) {
    rel_setup s;
    s.faults.drop    = drop;
    s.faults.dup     = dup;
    s.faults.reorder = reorder;
    s.faults.seed    = 17;
    return s;
}

/// Eight early buffers: unexpected eager messages soon find none and streams pause.
rel_setup few_buffers() {
    rel_setup s;
    s.opts.early_buffers = 8;
    return s;
}

rel_setup bad(hostile kind) {
    rel_setup s;
    s.bad = kind;
    return s;
}

/// `size` ranks; each sends `per_peer` messages of mixed sizes (empty, one frame, several,
/// rendezvous) to every other rank and receives as many, with half its receives posted
/// before its sends and half after, in shuffled order; every byte checked.
int all_pairs_rank(int rank, int size, int per_peer, const std::string& job, const std::string& dir,
                   const rel_setup& s) {
    static constexpr size_t sizes[] = {0, 64, 3000, 9000, 20000, 200};
    file_store store(dir);
    auto ep = test::open_rel(rank, size, job, &store, s);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp = (*ep)->fast();
    struct msg {
        int peer;
        int i;
        bool send;
        std::vector<uint8_t> buf;
    };
    std::vector<msg> ops;
    for (int p = 0; p < size; ++p) {
        if (p == rank) {
            continue;
        }
        for (int i = 0; i < per_peer; ++i) {
            size_t len = sizes[size_t(i) % 6];
            ops.push_back({p, i, true, std::vector<uint8_t>(len)});
            test::fill(ops.back().buf.data(), len, uint64_t(rank * 100 + p) * 100000 + uint64_t(i));
            ops.push_back({p, i, false, std::vector<uint8_t>(len, 0xee)});
        }
    }
    uint64_t state = uint64_t(rank) + 5;  // splitmix64
    auto next      = [&state] {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    std::vector<size_t> order(ops.size());
    for (size_t k = 0; k < order.size(); ++k) {
        order[k] = k;
    }
    for (size_t k = order.size(); k > 1; --k) {
        std::swap(order[k - 1], order[next() % k]);
    }
    // Receives posted late go last: first everything else in shuffled order.
    std::stable_partition(order.begin(), order.end(),
                          [&](size_t k) { return ops[k].send || ops[k].i % 2 == 0; });
    std::vector<uint64_t> cookies;
    completion c[64];
    std::map<uint64_t, completion> got;
    bool late = false;
    for (size_t k : order) {
        if (!late && !ops[k].send && ops[k].i % 2 != 0) {
            // The late receives' messages arrive first and wait as early arrivals.
            late = true;
            deadline until(0.2);
            while (!until.expired()) {
                int n = fp.poll(fp.ctx, c, 64);
                for (int j = 0; j < n; ++j) {
                    got[c[j].cookie] = c[j];
                }
            }
        }
        msg& m       = ops[k];
        int src      = m.send ? rank : m.peer;
        int dst      = m.send ? m.peer : rank;
        uint64_t tag = (uint64_t(src * 16 + dst) << 20) | uint64_t(m.i);
        uint64_t imm = tag ^ 0x1234;
        loom_status_t st;
        for (;;) {
            st = m.send ? fp.post_send(fp.ctx, m.peer, tag, imm, m.buf.data(), m.buf.size(), k + 1)
                        : fp.post_recv(fp.ctx, m.peer, tag, imm, m.buf.data(), m.buf.size(), k + 1);
            if (st != LOOM_ERR_NO_RESOURCE) {
                break;
            }
            int n = fp.poll(fp.ctx, c, 64);
            for (int j = 0; j < n; ++j) {
                got[c[j].cookie] = c[j];
            }
        }
        RANK_CHECK(rank, st == LOOM_SUCCESS, "post %d", st);
        cookies.push_back(k + 1);
    }
    std::vector<uint64_t> rest;
    for (uint64_t k : cookies) {
        if (!got.count(k)) {
            rest.push_back(k);
        }
    }
    auto more = wait_cookies(fp, rest, 120);
    got.insert(more.begin(), more.end());
    RANK_CHECK(rank, got.size() == ops.size(), "%zu of %zu completions", got.size(), ops.size());
    if (s.opts.early_buffers < 16) {
        const rel::reliable_stats* st = rel::stats_of(**ep);
        RANK_CHECK(rank, st->stalls > 0, "%zu early buffers, yet no stream paused",
                   s.opts.early_buffers);
    }
    for (size_t k = 0; k < ops.size(); ++k) {
        const completion& cc = got[k + 1];
        RANK_CHECK(rank, cc.status == LOOM_SUCCESS && cc.bytes == ops[k].buf.size(),
                   "op %zu: status %d bytes %zu", k, cc.status, cc.bytes);
        if (!ops[k].send) {
            long bad =
                test::check(ops[k].buf.data(), ops[k].buf.size(),
                            uint64_t(ops[k].peer * 100 + rank) * 100000 + uint64_t(ops[k].i));
            RANK_CHECK(rank, bad < 0, "from %d message %d differs at %ld", ops[k].peer, ops[k].i,
                       bad);
        }
    }
    (*ep)->close();
    return 0;
}

void run_all_pairs(int size, int per_peer, const rel_setup& s) {
    EXPECT_PASSED(test::run_job("relap", size, 240,
                                [&](int rank, const std::string& job, const std::string& dir) {
                                    return all_pairs_rank(rank, size, per_peer, job, dir, s);
                                }));
}

/// Mismatch by imm and by length, eager and rendezvous, receive first and message first:
/// the receive completes with LOOM_ERR_MISMATCH and the imm that came, nothing lands in its
/// buffer, the send completes, and the next message of the stream arrives intact.
int mismatch_rank(int rank, const std::string& job, const std::string& dir, const rel_setup& s) {
    file_store store(dir);
    auto ep = test::open_rel(rank, 2, job, &store, s);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp = (*ep)->fast();
    int peer       = 1 - rank;
    struct row {
        size_t send_len, recv_len;
        uint64_t send_imm, recv_imm;
    };
    const row rows[] = {{100, 100, 1, 2},      {100, 50, 1, 1}, {100000, 100000, 1, 3},
                        {100000, 99999, 1, 1}, {0, 8, 4, 4},    {5000, 5000, 9, 9}};
    constexpr int n  = 6;
    std::vector<std::vector<uint8_t>> bufs(n);
    uint64_t cookie = 1;
    for (int mode = 0; mode < 2; ++mode) {
        bool recv_first = mode == 0;
        uint64_t base   = uint64_t(mode) * 64;
        std::vector<uint64_t> want;
        if (rank == 0) {
            if (recv_first) {
                uint64_t c = cookie++;
                RANK_CHECK(rank, fp.post_recv(fp.ctx, peer, base + 50, 0, nullptr, 0, c) == 0, "r");
                RANK_CHECK(rank, wait_cookies(fp, {c}, 30).size() == 1, "no ready");
            }
            for (int i = 0; i < n; ++i) {
                bufs[size_t(i)].resize(rows[i].send_len);
                test::fill(bufs[size_t(i)].data(), rows[i].send_len, base + uint64_t(i));
                want.push_back(cookie);
                RANK_CHECK(rank,
                           fp.post_send(fp.ctx, peer, base + uint64_t(i), rows[i].send_imm,
                                        bufs[size_t(i)].data(), rows[i].send_len,
                                        cookie++) == LOOM_SUCCESS,
                           "send %d", i);
            }
            auto r = wait_cookies(fp, want, 60);
            RANK_CHECK(rank, r.size() == size_t(n), "%zu of %d sends completed", r.size(), n);
            for (auto& [k, c] : r) {
                RANK_CHECK(rank, c.status == LOOM_SUCCESS, "send status %d", c.status);
            }
        } else {
            if (!recv_first) {
                poll_keep(fp, 0.05);
            }
            for (int i = 0; i < n; ++i) {
                bufs[size_t(i)].assign(rows[i].recv_len, 0xee);
                want.push_back(cookie);
                RANK_CHECK(rank,
                           fp.post_recv(fp.ctx, peer, base + uint64_t(i), rows[i].recv_imm,
                                        bufs[size_t(i)].data(), rows[i].recv_len,
                                        cookie++) == LOOM_SUCCESS,
                           "recv %d", i);
            }
            if (recv_first) {
                uint64_t c = cookie++;
                RANK_CHECK(rank, fp.post_send(fp.ctx, peer, base + 50, 0, nullptr, 0, c) == 0, "s");
                want.push_back(c);
            }
            auto r = wait_cookies(fp, want, 60);
            RANK_CHECK(rank, r.size() == want.size(), "%zu of %zu completions", r.size(),
                       want.size());
            for (int i = 0; i < n; ++i) {
                const completion& c = r[want[size_t(i)]];
                bool mism =
                    rows[i].send_len != rows[i].recv_len || rows[i].send_imm != rows[i].recv_imm;
                if (mism) {
                    RANK_CHECK(rank, c.status == LOOM_ERR_MISMATCH && c.imm == rows[i].send_imm,
                               "mode %d row %d: status %d imm %llu", mode, i, c.status,
                               (unsigned long long)c.imm);
                    RANK_CHECK(rank,
                               std::all_of(bufs[size_t(i)].begin(), bufs[size_t(i)].end(),
                                           [](uint8_t b) { return b == 0xee; }),
                               "mode %d row %d: bytes landed in a mismatched receive", mode, i);
                } else {
                    RANK_CHECK(rank, c.status == LOOM_SUCCESS, "mode %d row %d: status %d", mode, i,
                               c.status);
                    RANK_CHECK(rank,
                               test::check(bufs[size_t(i)].data(), rows[i].recv_len,
                                           base + uint64_t(i)) < 0,
                               "mode %d row %d: wrong bytes", mode, i);
                }
            }
        }
    }
    (*ep)->close();
    return 0;
}

/// A control tag is an unsolicited completion at the receiver (control_cookie, tag, imm) and
/// no completion at the sender; ordinary traffic around it is unaffected.
int control_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_rel(rank, 2, job, &store, rel_setup{});
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp    = (*ep)->fast();
    uint64_t ctl_tag  = drivers::control_tag_bit | 77;
    uint8_t data[100] = {};
    if (rank == 0) {
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, ctl_tag, 4242, nullptr, 0, 900) == 0, "ctl");
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, 5, 1, data, sizeof data, 901) == 0, "send");
        std::vector<completion> others;
        auto r = wait_cookies(fp, {901}, 30, &others);
        RANK_CHECK(rank, r.size() == 1 && r[901].status == LOOM_SUCCESS, "send");
        test::poll_for(fp, 0.2, [&](const completion& c) { others.push_back(c); });
        for (const completion& c : others) {
            RANK_CHECK(rank, c.cookie != 900, "a completion for a control send");
        }
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 1, 6, 1, data, 0, 902) == 0, "recv");
        RANK_CHECK(rank, wait_cookies(fp, {902}, 30).size() == 1, "no goodbye message");
    } else {
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 0, 5, 1, data, sizeof data, 1) == 0, "recv");
        std::vector<completion> others;
        auto r = wait_cookies(fp, {1, drivers::control_cookie}, 30, &others);
        RANK_CHECK(rank, r.size() == 2, "%zu of 2 completions", r.size());
        const completion& c = r[drivers::control_cookie];
        RANK_CHECK(rank,
                   c.peer == 0 && c.tag == ctl_tag && c.imm == 4242 && c.status == LOOM_SUCCESS,
                   "control completion peer %d imm %llu", c.peer, (unsigned long long)c.imm);
        RANK_CHECK(rank, fp.post_send(fp.ctx, 0, 6, 1, data, 0, 2) == 0, "send");
        RANK_CHECK(rank, wait_cookies(fp, {2}, 30).size() == 1, "send");
    }
    (*ep)->close();
    return 0;
}

/// A caller away from loom for longer than the peer timeout (computing, or kept off its core)
/// while a receive waits: its peer, away too and then sending, is not failed. Rank 0 posts a
/// receive and makes no call for 2.5 s; rank 1 makes none for 3 s, then sends. With a 1 s
/// timeout the first pass after rank 0's absence used to count those 2.5 s as rank 1's
/// silence and fail it.
int away_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    rel_setup s;
    s.opts.peer_timeout_s = 1.0;
    auto ep               = test::open_rel(rank, 2, job, &store, s);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp   = (*ep)->fast();
    uint8_t data[64] = {};
    if (rank == 0) {
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 1, 3, 0, data, sizeof data, 30) == 0, "recv");
        ::usleep(2500000);
        auto r = wait_cookies(fp, {30}, 30);
        RANK_CHECK(rank, r.size() == 1 && r[30].status == LOOM_SUCCESS,
                   "the receive ended with status %d after the caller's absence",
                   r.empty() ? -1 : r[30].status);
        RANK_CHECK(rank, test::check(data, sizeof data, 3) < 0, "the message's bytes");
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, 4, 0, nullptr, 0, 31) == 0, "send");
        RANK_CHECK(rank, wait_cookies(fp, {31}, 30)[31].status == LOOM_SUCCESS, "reply");
    } else {
        ::usleep(3000000);
        test::fill(data, sizeof data, 3);
        RANK_CHECK(rank, fp.post_send(fp.ctx, 0, 3, 0, data, sizeof data, 40) == 0, "send");
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 0, 4, 0, nullptr, 0, 41) == 0, "recv");
        auto r = wait_cookies(fp, {40, 41}, 30);
        RANK_CHECK(rank, r.size() == 2 && r[40].status == LOOM_SUCCESS && r[41].status == 0,
                   "the exchange after the absence failed");
    }
    (*ep)->close();
    return 0;
}

/// cancel: a posted receive is withdrawn (a second cancel finds nothing; its message later
/// waits as an early arrival and disturbs nothing); a rendezvous send cancelled right after
/// posting, its buffer then overwritten, still delivers the right bytes (from the driver's
/// copy) and reports no completion; the stream stays in step.
int cancel_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_rel(rank, 2, job, &store, rel_setup{});
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp       = (*ep)->fast();
    constexpr size_t big = 1u << 20;
    std::vector<uint8_t> buf(big), small(64, 0xee);
    if (rank == 0) {
        // Rank 1 withdraws its receive of message 1 before it says go.
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 1, 8, 0, nullptr, 0, 50) == 0, "recv go");
        RANK_CHECK(rank, wait_cookies(fp, {50}, 30).size() == 1, "no go");
        test::fill(buf.data(), big, 3);
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, 3, 0, buf.data(), big, 30) == 0, "send");
        RANK_CHECK(rank, fp.cancel(fp.ctx, 30), "cancel of a posted send");
        RANK_CHECK(rank, !fp.cancel(fp.ctx, 30), "second cancel");
        std::fill(buf.begin(), buf.end(), uint8_t(0x55));  // the driver must not read it now
        test::fill(small.data(), small.size(), 1);
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, 1, 0, small.data(), 64, 10) == 0, "send 1");
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, 2, 0, small.data(), 64, 20) == 0, "send 2");
        std::vector<completion> others;
        auto r = wait_cookies(fp, {10, 20}, 30, &others);
        RANK_CHECK(rank, r.size() == 2, "sends");
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 1, 9, 0, nullptr, 0, 40) == 0, "recv");
        RANK_CHECK(rank, wait_cookies(fp, {40}, 30, &others).size() == 1, "final message");
        for (const completion& c : others) {
            RANK_CHECK(rank, c.cookie != 30, "a completion for a cancelled send");
        }
    } else {
        std::vector<uint8_t> got(big, 0xee);
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 0, 1, 0, small.data(), 64, 10) == 0, "recv 1");
        RANK_CHECK(rank, fp.cancel(fp.ctx, 10), "cancel of a posted receive");
        RANK_CHECK(rank, !fp.cancel(fp.ctx, 10), "second cancel");
        std::vector<uint8_t> small2(64, 0xee);
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 0, 2, 0, small2.data(), 64, 20) == 0, "recv 2");
        RANK_CHECK(rank, fp.post_send(fp.ctx, 0, 8, 0, nullptr, 0, 50) == 0, "send go");
        poll_keep(fp, 0.05);
        RANK_CHECK(rank, fp.post_recv(fp.ctx, 0, 3, 0, got.data(), big, 30) == 0, "recv big");
        std::vector<completion> others;
        auto r = wait_cookies(fp, {20, 30, 50}, 30, &others);
        RANK_CHECK(rank, r.size() == 3, "%zu of 3 completions", r.size());
        RANK_CHECK(rank, r[30].status == LOOM_SUCCESS && test::check(got.data(), big, 3) < 0,
                   "the cancelled send's bytes are wrong (status %d)", r[30].status);
        RANK_CHECK(rank, r[20].status == LOOM_SUCCESS && test::check(small2.data(), 64, 1) < 0,
                   "message 2");
        for (const completion& c : others) {
            RANK_CHECK(rank, c.cookie != 10, "a completion for a cancelled receive");
        }
        RANK_CHECK(rank,
                   std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0xee; }),
                   "bytes landed in a cancelled receive");
        RANK_CHECK(rank, fp.post_send(fp.ctx, 0, 9, 0, nullptr, 0, 40) == 0, "send");
        RANK_CHECK(rank, wait_cookies(fp, {40}, 30).size() == 1, "final message");
    }
    (*ep)->close();
    return 0;
}

/// Rank 1 dies (SIGKILL) or freezes (SIGSTOP, its link stays up: only silence tells) while
/// rank 0 streams 4 MiB messages to it; rank 0's sends and its receive from rank 1 complete
/// with LOOM_ERR_PEER_FAILURE within the timeout, and its log line names rank 1.
int failure_rank(int rank, const std::string& job, const std::string& dir, bool stop) {
    file_store store(dir);
    rel_setup s;
    s.opts.peer_timeout_s = 1.0;
    std::string log_path  = dir + "/rank0.log";
    if (rank == 0) {
        int fd = ::open(log_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
        RANK_CHECK(rank, fd >= 0, "log file");
        ::dup2(fd, 2);
        ::close(fd);
    }
    auto ep = test::open_rel(rank, 2, job, &store, s);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp       = (*ep)->fast();
    constexpr int n      = 64;
    constexpr size_t len = 4u << 20;
    std::vector<uint8_t> buf(len, 1);
    if (rank == 1) {
        RANK_CHECK(rank, store.set("pid1", std::to_string(::getpid())).is_ok(), "pid");
        for (int i = 0; i < n; ++i) {
            RANK_CHECK(rank,
                       fp.post_recv(fp.ctx, 0, uint64_t(i), 0, buf.data(), len, uint64_t(i)) == 0,
                       "recv");
        }
        std::vector<completion> c;
        test::wait_n(fp, &c, 2, 30);  // two whole messages, then the middle of the third
        ::raise(stop ? SIGSTOP : SIGKILL);
        return 1;  // never reached
    }
    for (int i = 0; i < n; ++i) {
        RANK_CHECK(rank, fp.post_send(fp.ctx, 1, uint64_t(i), 0, buf.data(), len, uint64_t(i)) == 0,
                   "send");
    }
    RANK_CHECK(rank, fp.post_recv(fp.ctx, 1, 999, 0, nullptr, 0, 999) == 0, "recv");
    std::vector<uint64_t> all;
    for (int i = 0; i < n; ++i) {
        all.push_back(uint64_t(i));
    }
    all.push_back(999);
    // Stopping is seen by silence alone: LOOM_REL_PEER_TIMEOUT (1 s here) after the last frame.
    auto r         = wait_cookies(fp, all, 30);
    double done_at = now_s();
    auto pid       = store.get("pid1", 5);
    if (pid) {
        ::kill(pid_t(std::stol(*pid)), SIGKILL);
    }
    RANK_CHECK(rank, r.size() == all.size(), "%zu of %zu operations completed", r.size(),
               all.size());
    int failed = 0;
    for (auto& [k, c] : r) {
        RANK_CHECK(rank, c.status == LOOM_SUCCESS || c.status == LOOM_ERR_PEER_FAILURE,
                   "op %llu status %d", (unsigned long long)k, c.status);
        failed += c.status == LOOM_ERR_PEER_FAILURE;
    }
    RANK_CHECK(rank, r[999].status == LOOM_ERR_PEER_FAILURE, "the receive did not fail");
    RANK_CHECK(rank, failed >= n - 8, "only %d operations failed", failed);
    (void)done_at;
    (*ep)->close();
    std::fflush(stderr);
    std::ifstream f(log_path);
    std::stringstream text;
    text << f.rdbuf();
    std::string t = text.str();
    RANK_CHECK(rank, t.find("rank 0, peer 1: failed") != std::string::npos,
               "the log does not name the peer: %s", t.c_str());
    bool why = stop ? t.find("no frame from it") != std::string::npos ||
                          t.find("no acknowledgement progress") != std::string::npos
                    : t.find("is down") != std::string::npos;
    RANK_CHECK(rank, why, "the log does not say why: %s", t.c_str());
    return 0;
}

void run_failure(bool stop) {
    double start         = now_s();
    std::string problems = test::run_job(
        "relfail", 2, 60, [&](int rank, const std::string& job, const std::string& dir) {
            return failure_rank(rank, job, dir, stop);
        });
    if (problems != "rank 1 killed by signal 9; ") {
        LOOM_FAIL("expected only rank 1 killed, got: " + problems);
    }
    std::printf("# failure seen and reported in %.2f s (peer timeout 1 s)\n", now_s() - start);
}

/// A router in the middle, in one process: every rank has one link to it (the shared-link
/// shape, link_of_peer all 0), and it forwards each frame by the header's destination rank,
/// dropping some. Ranks are threads here (the hub lives in the process).
struct hub {
    std::mutex m;
    std::vector<std::deque<std::vector<uint8_t>>> queues;
    uint64_t state   = 99;
    double drop      = 0;
    uint64_t dropped = 0;
};

class hub_link final : public drivers::common::frame_link {
  public:
    hub_link(hub* h, int me) : hub_(h), me_(me) {}
    size_t mtu() const override { return 9000; }
    bool send(const void* head, size_t hlen, const void* body, size_t blen) override {
        if (hlen + blen > mtu() || hlen < 16) {
            return false;
        }
        std::vector<uint8_t> f(hlen + blen);
        std::memcpy(f.data(), head, hlen);
        if (blen > 0) {
            std::memcpy(f.data() + hlen, body, blen);
        }
        uint32_t dst = be::get32(f.data() + 12);
        std::lock_guard<std::mutex> lock(hub_->m);
        if (dst >= hub_->queues.size()) {
            return true;  // nowhere: lost
        }
        if (hub_->queues[dst].size() >= 1024) {
            return false;  // the router's queue is full: try later
        }
        hub_->state = hub_->state * 6364136223846793005ULL + 1442695040888963407ULL;
        if (double(hub_->state >> 11) / double(uint64_t{1} << 53) < hub_->drop) {
            ++hub_->dropped;
            return true;
        }
        hub_->queues[dst].push_back(std::move(f));
        return true;
    }
    int recv(drivers::common::frame_view* out, int max) override {
        std::lock_guard<std::mutex> lock(hub_->m);
        auto& q = hub_->queues[size_t(me_)];
        if (max < 1 || q.empty()) {
            return 0;
        }
        cur_ = std::move(q.front());
        q.pop_front();
        out[0] = drivers::common::frame_view{cur_.data(), cur_.size()};
        return 1;
    }
    bool alive() const override { return true; }
    std::string describe() const override { return "hub link of rank " + std::to_string(me_); }

  private:
    hub* hub_;
    int me_;
    std::vector<uint8_t> cur_;
};

/// Three ranks behind one router (a shared link each, 5 % of frames dropped by the router):
/// every rank sends messages of every kind (empty, one frame, several, rendezvous) to both
/// others; every byte arrives once.
int hub_rank(int rank, hub* h, const std::string& job, const std::string& dir) {
    constexpr int size = 3;
    file_store store(dir);
    drivers::endpoint_config cfg = test::config_of(rank, size, job, &store, 20);
    std::vector<std::unique_ptr<drivers::common::frame_link>> links;
    links.push_back(std::make_unique<hub_link>(h, rank));
    auto ep = test::connected(
        rel::open_reliable(cfg, std::move(links), std::vector<int>(size, 0), rel::options{}));
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& fp           = (*ep)->fast();
    constexpr size_t sizes[] = {0, 100, 8000, 20000, 300000};
    constexpr int n          = 5;
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<int> from;
    uint64_t cookie = 1;
    for (int p = 0; p < size; ++p) {
        if (p == rank) {
            continue;
        }
        for (int i = 0; i < n; ++i) {
            out.emplace_back(sizes[i]);
            test::fill(out.back().data(), sizes[i], uint64_t(rank * 10 + p) * 100 + uint64_t(i));
            RANK_CHECK(rank,
                       fp.post_send(fp.ctx, p, uint64_t(rank * 10 + p) * 100 + uint64_t(i), 0,
                                    out.back().data(), sizes[i], cookie++) == 0,
                       "send");
            in.emplace_back(sizes[i], 0xee);
            from.push_back(p * 100 + i);
            RANK_CHECK(rank,
                       fp.post_recv(fp.ctx, p, uint64_t(p * 10 + rank) * 100 + uint64_t(i), 0,
                                    in.back().data(), sizes[i], cookie++) == 0,
                       "recv");
        }
    }
    std::vector<completion> got(size_t(cookie - 1));
    int want = int(cookie - 1);
    RANK_CHECK(rank, test::wait_completions(fp, got.data(), want, 60) == want,
               "completions missing");
    for (const completion& c : got) {
        RANK_CHECK(rank, c.status == LOOM_SUCCESS, "cookie %llu status %d",
                   (unsigned long long)c.cookie, c.status);
    }
    for (size_t k = 0; k < in.size(); ++k) {
        int p = from[k] / 100, i = from[k] % 100;
        RANK_CHECK(rank,
                   test::check(in[k].data(), in[k].size(),
                               uint64_t(p * 10 + rank) * 100 + uint64_t(i)) < 0,
                   "from %d message %d differs", p, i);
    }
    // Everyone done before anyone closes: a closing rank's goodbye would fail the others.
    RANK_CHECK(rank, store.set("done" + std::to_string(rank), "1").is_ok(), "done");
    for (int p = 0; p < size; ++p) {
        auto ok = store.get("done" + std::to_string(p), 30);
        RANK_CHECK(rank, ok.is_ok(), "rank %d never finished", p);
        test::poll_for(fp, 0.05, [](const completion&) {});
    }
    (*ep)->close();
    return 0;
}

void run_hub() {
    hub h;
    h.queues.resize(3);
    h.drop = 0.05;
    test::store_dir dir("relhub");
    std::string job        = test::unique_job("relhub");
    test::ranks_as_threads = true;
    std::string problems =
        test::run_ranks(3, 120, [&](int rank) { return hub_rank(rank, &h, job, dir.path); });
    test::ranks_as_threads = false;
    EXPECT_PASSED(problems);
    // Every byte arrived once although the router lost frames: they were recovered.
    std::printf("# the router dropped %llu frames\n", (unsigned long long)h.dropped);
    assert_true(h.dropped > 0);
}

/// connect() gives up after the configuration's timeout with LOOM_ERR_TIMEOUT naming the peers
/// that never answered and their links (a router that reaches rank 2, which never opens).
void connect_names_silent_peers() {
    hub h;
    h.queues.resize(3);
    test::store_dir dir("relsilent");
    std::string job        = test::unique_job("relsilent");
    test::ranks_as_threads = true;
    std::string problems   = test::run_ranks(2, 60, [&](int rank) {
        file_store store(dir.path);
        drivers::endpoint_config cfg = test::config_of(rank, 3, job, &store, 1.0);
        std::vector<std::unique_ptr<drivers::common::frame_link>> links;
        links.push_back(std::make_unique<hub_link>(&h, rank));
        auto ep = rel::open_reliable(cfg, std::move(links), std::vector<int>(3, 0), rel::options{});
        RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
        double t0 = now_s();
        status st = (*ep)->connect();
        RANK_CHECK(rank, st.code() == LOOM_ERR_TIMEOUT, "connect: %s", st.to_string().c_str());
        RANK_CHECK(rank, now_s() - t0 < 5, "took %.1f s", now_s() - t0);
        const std::string& m = st.message();
        RANK_CHECK(rank,
                     m.find("from peers 2 (over hub link of rank " + std::to_string(rank)) !=
                         std::string::npos,
                     "message names the wrong peers: %s", m.c_str());
        return 0;
    });
    test::ranks_as_threads = false;
    EXPECT_PASSED(problems);
}

/// LOOM_REL_* values are checked when an endpoint's options are read.
void parameters_are_checked() {
    auto& reg = params::registry::global();
    assert_true(rel::options_from_params().is_ok());
    assert_true(reg.set("LOOM_REL_WINDOW", "0").is_ok());
    auto o = rel::options_from_params();
    assert_false(o.is_ok());
    test::expect_has(o.error().message(), "LOOM_REL_WINDOW");
    assert_true(reg.set("LOOM_REL_WINDOW", "64").is_ok());
    assert_true(reg.set("LOOM_REL_RTO_US", "500").is_ok());
    o = rel::options_from_params();
    assert_true(o.is_ok());
    assert_int_equal(o->window, 64);
    assert_true(o->rto_s > 0.00049 && o->rto_s < 0.00051);
    assert_true(reg.set("LOOM_REL_WINDOW", "128").is_ok());
    assert_true(reg.set("LOOM_REL_RTO_US", "4000").is_ok());
}

}  // namespace

// An argument runs only the cases whose names match it (cmocka's filter, * as wildcard).
int main(int argc, char** argv) {
    if (argc > 1) {
        cmocka_set_test_filter(argv[1]);
    }
    const CMUnitTest tests[] = {
        LOOM_CASE(pingpong_0B_to_4MiB_recv_first_and_message_first, run_pingpong(rel_setup{})),
        LOOM_CASE(four_ranks_all_pairs_many_messages_in_flight, run_all_pairs(4, 300, rel_setup{})),
        LOOM_CASE(four_ranks_with_8_early_buffers_streams_pause_and_resume,
                  run_all_pairs(4, 100, few_buffers())),
        LOOM_CASE(
            mismatch_by_imm_and_length_delivers_nothing_and_keeps_step,
            EXPECT_PASSED(test::run_job("relmm", 2, 120,
                                        [](int r, const std::string& j, const std::string& d) {
                                            return mismatch_rank(r, j, d, rel_setup{});
                                        }))),
        LOOM_CASE(control_tags_are_unsolicited_completions,
                  EXPECT_PASSED(test::run_job("relctl", 2, 60, control_rank))),
        LOOM_CASE(cancel_receive_and_rendezvous_send,
                  EXPECT_PASSED(test::run_job("relcan", 2, 60, cancel_rank))),
        LOOM_CASE(pingpong_under_1pct_loss, run_pingpong(faults(0.01, 0, 0))),
        LOOM_CASE(pingpong_under_10pct_loss, run_pingpong(faults(0.10, 0, 0))),
        LOOM_CASE(pingpong_under_duplicates, run_pingpong(faults(0, 0.10, 0))),
        LOOM_CASE(pingpong_under_reordering, run_pingpong(faults(0, 0, 0.20))),
        LOOM_CASE(four_ranks_all_pairs_under_10pct_loss_dup_reorder,
                  run_all_pairs(4, 150, faults(0.10, 0.05, 0.10))),
        LOOM_CASE(
            mismatch_under_10pct_loss,
            EXPECT_PASSED(test::run_job("relmml", 2, 120,
                                        [](int r, const std::string& j, const std::string& d) {
                                            return mismatch_rank(r, j, d, faults(0.1, 0.05, 0.1));
                                        }))),
        LOOM_CASE(wrong_job_key_frames_dropped_and_counted, run_pingpong(bad(hostile::wrong_key))),
        LOOM_CASE(bad_checksum_frames_dropped_and_counted,
                  run_pingpong(bad(hostile::bad_checksum))),
        LOOM_CASE(truncated_frames_dropped_and_counted, run_pingpong(bad(hostile::truncated))),
        LOOM_CASE(unknown_rank_frames_dropped_and_counted,
                  run_pingpong(bad(hostile::unknown_rank))),
        LOOM_CASE(peer_killed_mid_transfer_fails_its_operations, run_failure(false)),
        LOOM_CASE(peer_stopped_mid_transfer_fails_by_silence, run_failure(true)),
        LOOM_CASE(a_caller_away_longer_than_the_timeout_does_not_fail_its_peer,
                  EXPECT_PASSED(test::run_job("relaway", 2, 60, away_rank))),
        LOOM_CASE(three_ranks_share_one_link_each_behind_a_lossy_router, run_hub()),
        LOOM_CASE(connect_names_the_peers_that_never_answered, connect_names_silent_peers()),
        LOOM_CASE(parameters_are_checked_when_options_are_read, parameters_are_checked()),
    };
    return LOOM_RUN_TESTS("drivers_reliable", tests);
}
