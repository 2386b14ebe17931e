// SPDX-License-Identifier: Apache-2.0
// fwd:<driver> between forked processes (drivers/forward/forward.hh): every rank of a torus
// or mesh sends to every other rank through its neighbours only; the data arrives intact and
// the per-link counters equal what dimension-ordered routing predicts. A mismatch two hops
// away completes the receive with LOOM_ERR_MISMATCH and delivers nothing; control messages
// cross several hops. The wrappers' wakers: fault:shm and fwd:shm offer the waker of the
// endpoint they wrap, so a rank sleeping on them is woken by its peer's send within
// milliseconds (wake_test_util.hh); a fault wrapper holding a delayed message shortens its
// own sleep, since nothing would ring it when the message falls due.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../drivers_tcp/tcp_test_util.hh"
#include "base/params.hh"
#include "drivers/forward/forward.hh"
#include "routing/dor.hh"
#include "test_case.hh"
#include "topology/topology.hh"
#include "wake_test_util.hh"

using namespace loom;
using loom::drivers::completion;
using loom::test::file_store;

namespace {

const size_t sizes[] = {0, 100, 300 * 1024};

// Every rank keeps polling (it forwards for the others) until all ranks reached `name`.
bool barrier(const drivers::fast_path& f, file_store& store, const char* name, int rank, int n,
             std::vector<completion>* extra) {
    if (!store.set(std::string(name) + std::to_string(rank), "1").is_ok()) {
        return false;
    }
    deadline until(60);
    for (int r = 0; r < n; ++r) {
        while (!store.get(std::string(name) + std::to_string(r), 0).is_ok()) {
            if (until.expired()) {
                return false;
            }
            test::poll_for(f, 0.002, [&](const completion& c) { extra->push_back(c); });
        }
    }
    return true;
}

uint64_t tag_of(int src, int dst, int s) {
    return (uint64_t(src) * 256 + uint64_t(dst)) * 4 + uint64_t(s) + 1;
}

// All pairs, three sizes each; then the link counters against the routes.
int all_pairs_rank(const std::string& driver, const std::string& fabric, routing::tie_rule ties,
                   size_t chunk_bytes, bool tight, int rank, const std::string& job,
                   const std::string& dir) {
    file_store store(dir);
    auto& reg = params::registry::global();
    RANK_CHECK(rank, reg.set("LOOM_FWD_CHUNK", std::to_string(chunk_bytes)).is_ok(), "chunk");
    if (tight) {
        RANK_CHECK(
            rank,
            reg.set("LOOM_FWD_BUFFERS", "2").is_ok() && reg.set("LOOM_FWD_MAX_OPS", "64").is_ok(),
            "tight");
    }
    RANK_CHECK(rank, reg.set("LOOM_ROUTE_TIES", routing::tie_rule_name(ties)).is_ok(),
               "LOOM_ROUTE_TIES");
    auto shape = topology::shape::parse(fabric);
    RANK_CHECK(rank, shape.is_ok(), "shape");
    int n   = shape->size();
    auto ep = test::open_named(driver, fabric, rank, n, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::map<uint64_t, std::vector<uint8_t>> in, out;
    int ops = 0;
    for (int p = 0; p < n; ++p) {
        for (int s = 0; s < 3 && p != rank; ++s) {
            uint64_t t = tag_of(p, rank, s);
            in[t].assign(sizes[s], 0xee);
            RANK_CHECK(
                rank,
                f.post_recv(f.ctx, p, t, t ^ 0xabcd, in[t].data(), sizes[s], t) == LOOM_SUCCESS,
                "post_recv");
            ++ops;
        }
    }
    for (int p = 0; p < n; ++p) {
        for (int s = 0; s < 3 && p != rank; ++s) {
            uint64_t t = tag_of(rank, p, s);
            out[t].resize(sizes[s]);
            test::fill(out[t].data(), sizes[s], t);
            RANK_CHECK(rank,
                       f.post_send(f.ctx, p, t, t ^ 0xabcd, out[t].data(), sizes[s],
                                   t | (uint64_t{1} << 40)) == LOOM_SUCCESS,
                       "post_send");
            ++ops;
        }
    }
    std::vector<completion> c(size_t(ops) + 16);
    int got = test::wait_completions(f, c.data(), ops, 60);
    RANK_CHECK(rank, got == ops, "%d of %d completions", got, ops);
    for (int i = 0; i < got; ++i) {
        RANK_CHECK(rank, c[size_t(i)].status == LOOM_SUCCESS, "status %d cookie %llx",
                   c[size_t(i)].status, (unsigned long long)c[size_t(i)].cookie);
    }
    for (auto& [t, buf] : in) {
        long bad = test::check(buf.data(), buf.size(), t);
        RANK_CHECK(rank, bad < 0, "tag %llu differs at %ld", (unsigned long long)t, bad);
    }
    std::vector<completion> extra;
    RANK_CHECK(rank, barrier(f, store, "done", rank, n, &extra), "barrier");
    RANK_CHECK(rank, extra.empty(), "%zu unexpected completions", extra.size());
    // What DOR predicts for this rank's links: every pair's bytes on every hop of its route.
    std::map<int, drivers::link_stat> want;
    for (int p : shape->neighbours(rank)) {
        want[p].peer = p;
    }
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            if (a == b) {
                continue;
            }
            auto path = routing::route(*shape, a, b, ties);
            for (size_t h = 0; h + 1 < path.size(); ++h) {
                for (size_t len : sizes) {
                    uint64_t chunks = len == 0 ? 1 : (len + chunk_bytes - 1) / chunk_bytes;
                    if (path[h] == rank) {
                        RANK_CHECK(rank, want.count(path[h + 1]) == 1, "route leaves the lattice");
                        want[path[h + 1]].sent_bytes += len;
                        want[path[h + 1]].sent_msgs += chunks;
                    }
                    if (path[h + 1] == rank) {
                        want[path[h]].recv_bytes += len;
                        want[path[h]].recv_msgs += chunks;
                    }
                }
            }
        }
    }
    auto stats = drivers::link_stats(**ep);
    RANK_CHECK(rank, stats.size() == want.size(), "%zu links, %zu neighbours", stats.size(),
               want.size());
    for (const auto& s : stats) {
        RANK_CHECK(rank, want.count(s.peer) == 1, "a link to non-neighbour %d", s.peer);
        const auto& w = want[s.peer];
        RANK_CHECK(rank,
                   s.sent_bytes == w.sent_bytes && s.sent_msgs == w.sent_msgs &&
                       s.recv_bytes == w.recv_bytes && s.recv_msgs == w.recv_msgs,
                   "link %d->%d: sent %llu B/%llu, recv %llu B/%llu; DOR predicts %llu B/%llu, "
                   "%llu B/%llu",
                   rank, s.peer, (unsigned long long)s.sent_bytes, (unsigned long long)s.sent_msgs,
                   (unsigned long long)s.recv_bytes, (unsigned long long)s.recv_msgs,
                   (unsigned long long)w.sent_bytes, (unsigned long long)w.sent_msgs,
                   (unsigned long long)w.recv_bytes, (unsigned long long)w.recv_msgs);
    }
    RANK_CHECK(rank, barrier(f, store, "stats", rank, n, &extra), "barrier");
    (*ep)->close();
    return 0;
}

void all_pairs(const char* driver, const char* fabric, int n,
               routing::tie_rule ties = routing::tie_rule::toward_plus, size_t chunk_bytes = 65536,
               bool tight = false) {
    std::string problems = test::run_job("fwd", n, 240, [&](int r, auto& job, auto& dir) {
        return all_pairs_rank(driver, fabric, ties, chunk_bytes, tight, r, job, dir);
    });
    if (!problems.empty()) {
        LOOM_FAIL(std::string(driver) + " " + fabric + ": " + problems);
    }
}

// mesh:3x3, rank 0 -> rank 2 is two hops (0 -> 1 -> 2). A: 300 KiB with the wrong imm, the
// receive posted first; B: 300 KiB arriving before its receive, which expects another
// length; C: 100 B that matches (the link stays in step). Rank 0 also sends a control notice
// to rank 8 (four hops).
int mismatch_rank(int rank, const std::string& job, const std::string& dir) {
    file_store store(dir);
    auto ep = test::open_named("fwd:shm", "mesh:3x3", rank, 9, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<completion> extra;
    const size_t big = 300 * 1024;
    if (rank == 2) {
        std::vector<uint8_t> a(big, 0x5a), b(200 * 1024, 0x5a), c(100, 0x5a);
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 11, 999, a.data(), big, 1) == LOOM_SUCCESS, "a");
        RANK_CHECK(rank, barrier(f, store, "posted", rank, 9, &extra), "barrier");
        test::poll_for(f, 0.2, [&](const completion& x) { extra.push_back(x); });
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 12, 12, b.data(), b.size(), 2) == LOOM_SUCCESS, "b");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 13, 13, c.data(), 100, 3) == LOOM_SUCCESS, "c");
        completion got[3];
        int n = 0;
        for (auto& x : extra) {
            if (n < 3) {
                got[n++] = x;
            }
        }
        RANK_CHECK(rank, extra.size() <= 3, "%zu early completions", extra.size());
        n += test::wait_completions(f, got + n, 3 - n, 30);
        RANK_CHECK(rank, n == 3, "%d completions", n);
        for (const auto& x : got) {
            if (x.cookie == 1) {
                RANK_CHECK(rank, x.status == LOOM_ERR_MISMATCH && x.imm == 11 && x.peer == 0,
                           "a: status %d imm %llu", x.status, (unsigned long long)x.imm);
            } else if (x.cookie == 2) {
                RANK_CHECK(rank, x.status == LOOM_ERR_MISMATCH && x.bytes == big, "b: %d %zu",
                           x.status, x.bytes);
            } else {
                RANK_CHECK(rank, x.cookie == 3 && x.status == LOOM_SUCCESS && x.bytes == 100,
                           "c: cookie %llu status %d", (unsigned long long)x.cookie, x.status);
            }
        }
        for (size_t i = 0; i < big; ++i) {
            RANK_CHECK(rank, a[i] == 0x5a, "a was written at %zu", i);
        }
        for (size_t i = 0; i < b.size(); ++i) {
            RANK_CHECK(rank, b[i] == 0x5a, "b was written at %zu", i);
        }
        RANK_CHECK(rank, test::check(c.data(), 100, 13) < 0, "c differs");
        extra.clear();
    } else if (rank == 0) {
        std::vector<uint8_t> a(big), b(big), c(100);
        test::fill(a.data(), big, 11);
        test::fill(b.data(), big, 12);
        test::fill(c.data(), 100, 13);
        RANK_CHECK(rank, barrier(f, store, "posted", rank, 9, &extra), "barrier");
        RANK_CHECK(rank, f.post_send(f.ctx, 2, 11, 11, a.data(), big, 1) == LOOM_SUCCESS, "a");
        RANK_CHECK(rank, f.post_send(f.ctx, 2, 12, 12, b.data(), big, 2) == LOOM_SUCCESS, "b");
        RANK_CHECK(rank, f.post_send(f.ctx, 2, 13, 13, c.data(), 100, 3) == LOOM_SUCCESS, "c");
        RANK_CHECK(rank,
                   f.post_send(f.ctx, 8, drivers::control_tag_bit | 77, 4242, nullptr, 0, 9) ==
                       LOOM_SUCCESS,
                   "control");
        completion got[3];
        RANK_CHECK(rank, test::wait_completions(f, got, 3, 30) == 3, "sends");
        for (const auto& x : got) {
            RANK_CHECK(rank, x.status == LOOM_SUCCESS, "send %llu: %d",
                       (unsigned long long)x.cookie, x.status);
        }
    } else {
        RANK_CHECK(rank, barrier(f, store, "posted", rank, 9, &extra), "barrier");
    }
    RANK_CHECK(rank, barrier(f, store, "done", rank, 9, &extra), "barrier");
    if (rank == 8) {
        RANK_CHECK(rank, extra.size() == 1, "%zu completions, want the control notice",
                   extra.size());
        const auto& x = extra[0];
        RANK_CHECK(rank,
                   x.cookie == drivers::control_cookie && x.peer == 0 &&
                       x.tag == (drivers::control_tag_bit | 77) && x.imm == 4242,
                   "control: cookie %llx peer %d imm %llu", (unsigned long long)x.cookie, x.peer,
                   (unsigned long long)x.imm);
    } else {
        RANK_CHECK(rank, extra.empty(), "%zu unexpected completions", extra.size());
    }
    RANK_CHECK(rank, barrier(f, store, "closing", rank, 9, &extra), "barrier");
    (*ep)->close();
    return 0;
}

// ring:4, rank 0 -> rank 2 is two hops. A: rank 0 cancels a 300 KiB send right after
// posting it and scribbles over its buffer; rank 2 still gets the right bytes (the rest
// went on from a copy) or a withdrawn receive. B: rank 2 cancels a matched 32 MiB receive
// while it flows (what arrives is drained); C, the next message, arrives intact. Neither
// cancelled cookie ever completes.
int cancel_rank(int rank, const std::string& job, const std::string& dir) {
    const size_t huge = size_t{32} << 20;  // b: long enough to be cancelled while it flows
    file_store store(dir);
    auto ep = test::open_named("fwd:shm", "ring:4", rank, 4, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    const auto& f = (*ep)->fast();
    std::vector<completion> extra;
    const size_t big = 300 * 1024;
    if (rank == 0) {
        std::vector<uint8_t> a(big), b(huge), c(big);
        test::fill(a.data(), big, 21);
        test::fill(b.data(), huge, 22);
        test::fill(c.data(), big, 23);
        RANK_CHECK(rank, f.post_send(f.ctx, 2, 21, 21, a.data(), big, 1) == LOOM_SUCCESS, "a");
        RANK_CHECK(rank, f.cancel(f.ctx, 1), "cancel a");
        std::memset(a.data(), 0x11, big);
        RANK_CHECK(rank, barrier(f, store, "posted", rank, 4, &extra), "barrier");
        RANK_CHECK(rank, f.post_send(f.ctx, 2, 22, 22, b.data(), huge, 2) == LOOM_SUCCESS, "b");
        RANK_CHECK(rank, f.post_send(f.ctx, 2, 23, 23, c.data(), big, 3) == LOOM_SUCCESS, "c");
        completion got[2];
        RANK_CHECK(rank, test::wait_completions(f, got, 2, 30) == 2, "sends");
        for (const auto& x : got) {
            RANK_CHECK(rank, x.status == LOOM_SUCCESS && (x.cookie == 2 || x.cookie == 3),
                       "send %llu: %d", (unsigned long long)x.cookie, x.status);
        }
    } else if (rank == 2) {
        std::vector<uint8_t> a(big), b(huge), c(big);
        test::poll_for(f, 0.05, [&](const completion& x) { extra.push_back(x); });
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 21, 21, a.data(), big, 1) == LOOM_SUCCESS, "a");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 22, 22, b.data(), huge, 2) == LOOM_SUCCESS, "b");
        RANK_CHECK(rank, f.post_recv(f.ctx, 0, 23, 23, c.data(), big, 3) == LOOM_SUCCESS, "c");
        RANK_CHECK(rank, barrier(f, store, "posted", rank, 4, &extra), "barrier");
        // Cancel b once its chunks are on their way in (it may even be complete: then
        // cancel says false and b completes normally).
        test::poll_for(f, 0.005, [&](const completion& x) { extra.push_back(x); });
        bool cancelled = f.cancel(f.ctx, 2);
        std::printf("# cancel of a matched receive: %s\n", cancelled ? "withdrawn" : "too late");
        int want = cancelled ? 2 : 3;
        completion got[3];
        int n = 0;
        for (auto& x : extra) {
            RANK_CHECK(rank, n < want, "too many completions");
            got[n++] = x;
        }
        extra.clear();
        n += test::wait_completions(f, got + n, want - n, 30);
        RANK_CHECK(rank, n == want, "%d completions", n);
        for (int j = 0; j < n; ++j) {
            const completion& x = got[j];
            if (x.cookie == 1) {
                RANK_CHECK(rank,
                           (x.status == LOOM_SUCCESS && test::check(a.data(), big, 21) < 0) ||
                               (x.status == LOOM_ERR_PEER_FAILURE && x.withdrawn),
                           "a: status %d withdrawn %d", x.status, int(x.withdrawn));
                std::printf("# cancelled send: %s\n",
                            x.status == LOOM_SUCCESS ? "finished from a copy" : "withdrawn");
            } else if (x.cookie == 2) {
                RANK_CHECK(rank, !cancelled && x.status == LOOM_SUCCESS, "b: %d", x.status);
            } else {
                RANK_CHECK(rank, x.cookie == 3 && x.status == LOOM_SUCCESS, "cookie %llu: %d",
                           (unsigned long long)x.cookie, x.status);
                RANK_CHECK(rank, test::check(c.data(), big, 23) < 0, "c differs");
            }
        }
    } else {
        RANK_CHECK(rank, barrier(f, store, "posted", rank, 4, &extra), "barrier");
    }
    RANK_CHECK(rank, barrier(f, store, "done", rank, 4, &extra), "barrier");
    RANK_CHECK(rank, extra.empty(), "%zu unexpected completions (cookie %llu)", extra.size(),
               extra.empty() ? 0ull : (unsigned long long)extra[0].cookie);
    // What is left (the drained rest of b, completions of forwarded chunks) runs out.
    deadline until(20);
    while (f.pending(f.ctx) && !until.expired()) {
        test::poll_for(f, 0.001, [&](const completion& x) { extra.push_back(x); });
    }
    RANK_CHECK(rank, !f.pending(f.ctx) && extra.empty(), "still pending, %zu completions",
               extra.size());
    RANK_CHECK(rank, barrier(f, store, "closing", rank, 4, &extra), "barrier");
    (*ep)->close();
    return 0;
}

// ---- the wrappers' wakers ----

// Both ranks keep polling until the other is done: a fwd rank forwards only while polled.
int wake_rank(const std::string& driver, bool sender_sleeps, int rank, const std::string& job,
              const std::string& dir) {
    test::file_store store(dir);
    auto ep = test::open_named(driver, "ring:2", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    if (int rc = test::wake::eager_rounds(**ep, driver, rank, sender_sleeps); rc != 0) {
        return rc;
    }
    test::tally t(0);  // only for the closing handshake
    RANK_CHECK(rank, t.finish((*ep)->fast(), store, rank), "peer not done");
    return 0;
}

void run_wake(const char* driver, bool sender_sleeps = false) {
    std::string d = driver;
    EXPECT_PASSED(test::run_job("wrapwake", 2, 60, [&](int rank, auto& job, auto& dir) {
        return wake_rank(d, sender_sleeps, rank, job, dir);
    }));
}

// The sender sleeps too: its message, delayed 20 ms in the wrapper, is posted by the poll
// that follows the shortened sleep, well before the 5 s timeout.
void fault_delay_shortens_the_sleep(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_FAULT_DELAY_US", "20000").is_ok());
    run_wake("fault:shm", true);
    assert_true(reg.set("LOOM_FAULT_DELAY_US", "0").is_ok());
}

}  // namespace

LOOM_TEST_MAIN(
    "drivers_forward", LOOM_CASE(shm_torus_2x2x2, all_pairs("fwd:shm", "torus:2x2x2", 8)),
    LOOM_CASE(shm_torus_3x3, all_pairs("fwd:shm", "torus:3x3", 9)),
    LOOM_CASE(shm_mesh_3x3, all_pairs("fwd:shm", "mesh:3x3", 9)),
    LOOM_CASE(mismatch_two_hops_delivers_nothing,
              EXPECT_PASSED(test::run_job("fwdmm", 9, 120, mismatch_rank))),
    LOOM_CASE(cancel_across_two_hops, EXPECT_PASSED(test::run_job("fwdcx", 4, 120, cancel_rank))),
    // An even wrapping dimension: the antipodal pairs go the way LOOM_ROUTE_TIES says.
    LOOM_CASE(shm_torus_4x2_source_parity,
              all_pairs("fwd:shm", "torus:4x2", 8, routing::tie_rule::source_parity)),
    LOOM_CASE(shm_ring_4_toward_plus,
              all_pairs("fwd:shm", "ring:4", 4, routing::tie_rule::toward_plus)),
    // 4 KiB chunks (75 per 300 KiB message), two forwarding buffers and 64 chunk entries per
    // rank: arrivals stall on the links and payloads wait upstream, and everything still
    // arrives.
    LOOM_CASE(shm_torus_3x3_tight_resources,
              all_pairs("fwd:shm", "torus:3x3", 9, routing::tie_rule::toward_plus, 4096, true)),
    LOOM_CASE(tcp_torus_2x2x2, all_pairs("fwd:tcp", "torus:2x2x2", 8)),
    LOOM_CASE(fault_shm_send_wakes_the_sleeper, run_wake("fault:shm")),
    LOOM_CASE(fwd_shm_send_wakes_the_sleeper, run_wake("fwd:shm")),
    cmocka_unit_test(fault_delay_shortens_the_sleep))
