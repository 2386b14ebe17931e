// SPDX-License-Identifier: Apache-2.0
// Failure semantics of calls across real processes (fork; the transport in argv[1]):
// mismatched calls end with LOOM_ERR_MISMATCH on every rank, promptly (long before the
// deadline), with receive buffers as loom.h promises; a rank that times out makes a late
// peer fail instead of succeed; a rank that never calls is named by every other rank, which
// returns and destroys its communicator within the deadline.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.hh"
#include "base/clock.hh"
#include "proc_launch.hh"
#include "test_main.hh"

namespace {

using namespace loom::test::api;
using loom::test::sleep_s;

const char* transport = "shm";

// Far below the communicators' deadline (20 s): a mismatch is found by evidence, not by
// waiting the deadline out.
constexpr double prompt_s = 4.0;

// Checks a call's outcome: `want`, within `within_s`.
void expect_status(rank_context& ctx, const char* what, loom_status_t st, loom_status_t want,
                   double took, double within_s) {
    ctx.check(st == want && took < within_s, std::string(what) + ": " + loom_status_string(st) +
                                                 " (want " + loom_status_string(want) + ") after " +
                                                 std::to_string(took) +
                                                 " s: " + loom_last_error_message());
}

bool untouched(const std::vector<int32_t>& v, size_t from, size_t to, int32_t sentinel) {
    for (size_t i = from; i < to && i < v.size(); ++i) {
        if (v[i] != sentinel) {
            return false;
        }
    }
    return true;
}

// A rank that leaves (destroys its communicator) while a peer is still in the call is a
// peer failure for that peer: the mismatch workloads stay a moment so that each rank's
// status reflects the call, not the teardown.
void settle() {
    sleep_s(0.5);
}

void run(int nranks, workload fn, const char* name, const void* arg = nullptr,
         launch_options o = {}) {
    o.nranks    = nranks;
    o.transport = transport;
    expect_launch_ok(o, fn, arg, name);
}

// (a) Broadcast with different roots (rank 0 names 0, the others 1), small and 4 MiB. N = 2:
// both ranks fail with MISMATCH promptly, nothing received. N = 3: the two roots fail with
// MISMATCH; rank 2 agrees with root 1 and may complete with root 1's data (loom.h: a rank
// whose peers all matched its call may complete), but never holds anything of rank 0's.
void roots_differ(rank_context& ctx, const void* raw) {
    size_t count = *static_cast<const size_t*>(raw);
    int root     = ctx.rank == 0 ? 0 : 1;
    std::vector<int32_t> in(count, 100 + ctx.rank), out(count, -7);
    double t0 = loom::now_s();
    loom_status_t st =
        loom_broadcast(ctx.comm, in.data(), out.data(), count, LOOM_INT32, root, nullptr, nullptr);
    double took = loom::now_s() - t0;
    if (ctx.rank == 2 && st == LOOM_SUCCESS) {
        ctx.check(untouched(out, 0, count, 101), "rank 2 completed without root 1's data");
        settle();
        return;
    }
    expect_status(ctx, "broadcast, roots differ", st, LOOM_ERR_MISMATCH, took, prompt_s);
    if (ctx.rank != root) {
        // Sentinel or root 1's data (partly, when the notice came mid-transfer); never rank 0's.
        bool only_matched = true;
        for (int32_t v : out) {
            only_matched &= v == -7 || v == 101;
        }
        ctx.check(only_matched, "a non-root's receive buffer holds data of a mismatched call");
    }
    settle();
}

void broadcast_roots_differ(void**) {
    for (int n : {2, 3}) {
        for (size_t count : {size_t{16}, size_t{1} << 20}) {
            run(n, roots_differ, "broadcast roots differ", &count);
        }
    }
}

// (b) Rank 0 all-reduces while the others reduce to root 0.
void reduce_against_allreduce_workload(rank_context& ctx, const void*) {
    std::vector<int32_t> in(64, 1), out(64, -7);
    double t0        = loom::now_s();
    loom_status_t st = ctx.rank == 0 ? loom_allreduce(ctx.comm, in.data(), out.data(), 64,
                                                      LOOM_INT32, LOOM_SUM, nullptr, nullptr)
                                     : loom_reduce(ctx.comm, in.data(), out.data(), 64, LOOM_INT32,
                                                   LOOM_SUM, 0, nullptr, nullptr);
    expect_status(ctx, "reduce against allreduce", st, LOOM_ERR_MISMATCH, loom::now_s() - t0,
                  prompt_s);
    ctx.check(untouched(out, 0, 64, -7), "a receive buffer was written");
    settle();
}

void reduce_against_allreduce(void**) {
    run(3, reduce_against_allreduce_workload, "reduce against allreduce");
}

// (c) A send of 10 elements against a receive of 11: both fail, the receiver got nothing.
void send_recv_counts_differ_workload(rank_context& ctx, const void*) {
    std::vector<int32_t> buf(11, ctx.rank == 0 ? 5 : -7);
    double t0        = loom::now_s();
    loom_status_t st = ctx.rank == 0
                           ? loom_send(ctx.comm, buf.data(), 10, LOOM_INT32, 1, nullptr, nullptr)
                           : loom_recv(ctx.comm, buf.data(), 11, LOOM_INT32, 0, nullptr, nullptr);
    expect_status(ctx, ctx.rank == 0 ? "send of 10" : "recv of 11", st, LOOM_ERR_MISMATCH,
                  loom::now_s() - t0, prompt_s);
    if (ctx.rank == 1) {
        ctx.check(untouched(buf, 0, 11, -7), "the receive buffer was written");
    }
    settle();
}

void send_recv_counts_differ(void**) {
    run(2, send_recv_counts_differ_workload, "send 10 against recv 11");
}

// (d) Rank 1 gives up after 0.3 s; rank 0 calls 1 s later: it must not succeed, and its
// error names rank 1. Broadcast from rank 0 (a send-only role there) and all-reduce.
void late_rank_workload(rank_context& ctx, const void*) {
    for (bool broadcast : {true, false}) {
        std::vector<int32_t> in(32, 3), out(32, -7);
        loom_coll_attr_t attr;
        loom_coll_attr_init(&attr);
        attr.timeout_s = ctx.rank == 1 ? 0.3 : 5;
        if (ctx.rank == 0) {
            sleep_s(1.0);
        }
        double t0              = loom::now_s();
        loom_status_t st       = broadcast ? loom_broadcast(ctx.comm, in.data(), out.data(), 32,
                                                            LOOM_INT32, 0, &attr, nullptr)
                                           : loom_allreduce(ctx.comm, in.data(), out.data(), 32,
                                                            LOOM_INT32, LOOM_SUM, &attr, nullptr);
        double took            = loom::now_s() - t0;
        const char* what       = broadcast ? "broadcast" : "allreduce";
        loom_error_info_t info = last_error();
        if (ctx.rank == 1) {
            expect_status(ctx, what, st, LOOM_ERR_TIMEOUT, took, 2.0);
        } else {
            ctx.check(st != LOOM_SUCCESS && took < 2.0 && info.peer == 1,
                      std::string("late ") + what + ": " + loom_status_string(st) + " after " +
                          std::to_string(took) + " s, peer " + std::to_string(info.peer) + ": " +
                          info.message);
        }
        sleep_s(1.5);  // both settle before the next round
    }
}

void late_rank_fails(void**) {
    run(2, late_rank_workload, "late rank");
}

// (e) All-gather with counts 32 against 40 (N = 2): both fail; nothing from the other rank
// landed: outside its own block, every rank's receive buffer is untouched.
void allgather_counts_differ_workload(rank_context& ctx, const void*) {
    size_t count = ctx.rank == 0 ? 32 : 40;
    std::vector<int32_t> in(count, 9), out(count, -7);
    size_t block = count / 2;
    double t0    = loom::now_s();
    loom_status_t st =
        loom_allgather(ctx.comm, in.data(), out.data(), count, LOOM_INT32, nullptr, nullptr);
    expect_status(ctx, "allgather 32 against 40", st, LOOM_ERR_MISMATCH, loom::now_s() - t0,
                  prompt_s);
    size_t own_from = ctx.rank == 0 ? 0 : block, own_to = ctx.rank == 0 ? block : count;
    ctx.check(untouched(out, 0, own_from, -7) && untouched(out, own_to, count, -7),
              "data of the mismatched peer landed in the receive buffer");
    settle();
}

void allgather_counts_differ(void**) {
    run(2, allgather_counts_differ_workload, "allgather counts differ");
}

// Rank 2 of 4 never calls (it sleeps past everyone's deadline of 3 s): every other rank's
// all-reduce ends with TIMEOUT at the deadline, its error names rank 2, and destroying the
// communicator afterwards returns at once (rank 0: within the rendezvous's linger time).
constexpr double never_deadline_s = 3.0;

void never_calls_workload(rank_context& ctx, const void*) {
    if (ctx.rank == 2) {
        sleep_s(never_deadline_s + 7.0);
        loom_comm_destroy(ctx.comm);
        return;
    }
    // Rank 1 waits on rank 3 (recursive doubling's second round), which waits on rank 2: rank 1
    // starts first, so its deadline passes first, with the neighbour it waits on alive.
    if (ctx.rank != 1) {
        sleep_s(0.3);
    }
    std::vector<int32_t> in(16, 1), out(16, -7);
    double t0 = loom::now_s();
    loom_status_t st =
        loom_allreduce(ctx.comm, in.data(), out.data(), 16, LOOM_INT32, LOOM_SUM, nullptr, nullptr);
    double took            = loom::now_s() - t0;
    loom_error_info_t info = last_error();
    ctx.check(
        st == LOOM_ERR_TIMEOUT && took >= never_deadline_s - 0.1 && took < never_deadline_s + 1.5 &&
            info.peer == 2 && contains(info.message, "rank 2"),
        std::string("never-calling rank: ") + loom_status_string(st) + " after " +
            std::to_string(took) + " s, peer " + std::to_string(info.peer) + ": " + info.message);
    double t1 = loom::now_s();
    loom_comm_destroy(ctx.comm);
    // Rank 0 keeps the rendezvous for ranks still connected to it, but only for
    // LOOM_BOOTSTRAP_LINGER (2 s by default), never until rank 2 wakes up (about 6.5 s on).
    double bound = ctx.rank == 0 ? 3.0 : 1.0;
    ctx.check(loom::now_s() - t1 < bound, "rank " + std::to_string(ctx.rank) +
                                              ": loom_comm_destroy took " +
                                              std::to_string(loom::now_s() - t1) + " s");
}

void never_calling_rank_is_named(void**) {
    run(4, never_calls_workload, "never-calling rank", nullptr,
        {.call_timeout_s = never_deadline_s, .workload_destroys = true});
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1) {
        transport = argv[1];
    }
    const CMUnitTest tests[] = {
        cmocka_unit_test(broadcast_roots_differ),  cmocka_unit_test(reduce_against_allreduce),
        cmocka_unit_test(send_recv_counts_differ), cmocka_unit_test(late_rank_fails),
        cmocka_unit_test(allgather_counts_differ), cmocka_unit_test(never_calling_rank_is_named),
    };
    return LOOM_RUN_TESTS("api_failures", tests);
}
