// SPDX-License-Identifier: Apache-2.0
// In-network collectives through a running loom-switch, across real processes (started by
// loomrun --switch, or by run_inc.sh beside its own switch). Each rank runs allreduce,
// reduce and broadcast with algorithm "inc" over every dtype × op the node reduces, counts
// 0 … the largest size, in place and out of place, and checks its output against the
// independent references of reference.hh; float sums are also run twice and compared bit
// for bit (deterministic order). Then:
//   --expect inc       rank 0 asks the node for its statistics: contributions > 0, i.e. the
//                      calls really went through the network (not a silent fallback);
//   --expect fallback  the node refused the communicator: an explicit `inc` fails on every
//                      rank (LOOM_ERR_NOT_APPLICABLE, naming the reason), the tuner's
//                      choices give exact results, the node saw no contribution;
//   --until-failure    all-reduce in a loop until a call fails (the switch is killed by the
//                      script): the failure must come within the call's timeout on every
//                      rank, name the aggregation node (on every rank), and no result
//                      may be wrong.
// Also: four all-reduces in flight at once, and (single node) two communicators split from
// the world sharing the node, each with its own sums.
// Output: "rank R of N: C checks, F failed" (run_inc.sh counts them).
#include <loom/loom.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.hh"
#include "base/clock.hh"
#include "drivers/datagram.hh"
#include "inc/protocol/packet.hh"
#include "proc_launch.hh"
#include "reference.hh"

namespace {

using namespace loom::test::api;

bool refused = false;  // --expect fallback: the node refused the communicator

// Names `inc`, except on a refused communicator: there an explicit `inc` cannot run (it
// fails the call, checked by explicit_inc_case), so the cases run the tuner's choice.
loom_coll_attr_t inc_attr() {
    return attr_naming(refused ? nullptr : "inc");
}

// An explicit `inc` that cannot run fails on every rank with LOOM_ERR_NOT_APPLICABLE,
// naming the algorithm and the reason, and runs nothing else in its place.
void explicit_inc_fails(rank_context& ctx, loom_dtype_t d, loom_op_t o, const char* reason) {
    std::vector<uint8_t> in(100 * loom_dtype_size(d), 1), out(in.size(), 0x5a);
    loom_coll_attr_t a = attr_naming("inc");
    loom_status_t st   = loom_allreduce(ctx.comm, in.data(), out.data(), 100, d, o, &a, nullptr);
    std::string msg    = loom_last_error_message();
    ctx.check(
        st == LOOM_ERR_NOT_APPLICABLE && msg.find("allreduce inc: ") != std::string::npos &&
            msg.find(reason) != std::string::npos,
        "explicit inc, dtype " + std::to_string(d) + ": status " + std::to_string(st) + ": " + msg);
    ctx.check(out[0] == 0x5a, "a failed explicit inc wrote the output");
}

constexpr loom_dtype_t dtypes[] = {LOOM_INT32,   LOOM_INT64,    LOOM_FLOAT32,
                                   LOOM_FLOAT64, LOOM_BFLOAT16, LOOM_FLOAT16};
constexpr loom_op_t ops[]       = {LOOM_SUM, LOOM_MIN, LOOM_MAX};

std::string name_of(const char* what, loom_dtype_t d, loom_op_t o, size_t n, bool in_place) {
    return std::string(what) + " dtype " + std::to_string(d) + " op " + std::to_string(o) +
           " count " + std::to_string(n) + (in_place ? " in place" : "");
}

void allreduce_case(rank_context& ctx, loom_dtype_t d, loom_op_t o, size_t n, bool in_place,
                    uint64_t seed) {
    size_t e = loom_dtype_size(d);
    std::vector<uint8_t> in(n * e + 1), out(n * e + 1);
    fill_reduction_input(d, o, seed, ctx.rank, in.data(), 0, n);
    loom_coll_attr_t a = inc_attr();
    void* dst          = in_place ? in.data() : out.data();
    loom_status_t st   = loom_allreduce(ctx.comm, in.data(), dst, n, d, o, &a, nullptr);
    std::string what   = name_of("allreduce", d, o, n, in_place);
    ctx.check(st == LOOM_SUCCESS, what + ": " + loom_last_error_message());
    std::string bad = check_reduction(d, o, seed, ctx.size, dst, 0, n);
    ctx.check(bad.empty(), what + ": " + bad);
}

void reduce_broadcast_case(rank_context& ctx, loom_dtype_t d, loom_op_t o, size_t n, int root,
                           uint64_t seed) {
    size_t e = loom_dtype_size(d);
    std::vector<uint8_t> in(n * e + 1), out(n * e + 1, 0);
    fill_reduction_input(d, o, seed, ctx.rank, in.data(), 0, n);
    loom_coll_attr_t a = inc_attr();
    loom_status_t st   = loom_reduce(ctx.comm, in.data(), out.data(), n, d, o, root, &a, nullptr);
    std::string what   = name_of("reduce", d, o, n, false) + " root " + std::to_string(root);
    ctx.check(st == LOOM_SUCCESS, what + ": " + loom_last_error_message());
    if (ctx.rank == root) {
        std::string bad = check_reduction(d, o, seed, ctx.size, out.data(), 0, n);
        ctx.check(bad.empty(), what + ": " + bad);
    }
    // Broadcast the root's input: everyone must end with it.
    std::vector<uint8_t> want(n * e + 1), got(n * e + 1, 0);
    fill_bytes(seed, uint64_t(root), want.data(), n * e);
    if (ctx.rank == root) {
        got = want;
    }
    st   = loom_broadcast(ctx.comm, got.data(), got.data(), n, d, root, &a, nullptr);
    what = name_of("broadcast", d, LOOM_SUM, n, true) + " root " + std::to_string(root);
    ctx.check(st == LOOM_SUCCESS, what + ": " + loom_last_error_message());
    ctx.check(first_difference(got.data(), want.data(), n * e) < 0, what + ": wrong bytes");
}

// Float sums in arrival order would differ run to run; the node's rank order must not.
void deterministic_case(rank_context& ctx, size_t n) {
    std::vector<float> in(n), a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
        in[i] =
            1.0f / float(1 + (i * 7 + size_t(ctx.rank) * 13) % 97) * (ctx.rank % 2 ? -1e3f : 1e-3f);
    }
    loom_coll_attr_t at = inc_attr();
    for (auto* out : {&a, &b}) {
        ctx.check(loom_allreduce(ctx.comm, in.data(), out->data(), n, LOOM_FLOAT32, LOOM_SUM, &at,
                                 nullptr) == LOOM_SUCCESS,
                  out == &a ? "deterministic run 1" : "deterministic run 2");
    }
    ctx.check(std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0,
              "float sums differ bitwise between two runs");
}

// The node's statistics, through its own protocol (what loom-switch --stats prints).
long node_counter(const char* name) {
    const char* addr = std::getenv("LOOM_SWITCH");
    if (addr == nullptr || std::strchr(addr, '=') != nullptr) {
        return -1;  // a tree: not asked here
    }
    auto l = loom::drivers::connect_datagram(addr, 5);
    if (!l) {
        return -2;
    }
    loom::inc::header h;
    h.kind = loom::inc::packet_kind::stats_query;
    uint8_t q[loom::inc::header_bytes];
    (*l)->send(q, loom::inc::encode(h, nullptr, q));
    loom::deadline until(5);
    while (!until.expired()) {
        const uint8_t* p = nullptr;
        size_t len       = 0;
        loom::inc::header r;
        const uint8_t* text = nullptr;
        if ((*l)->recv(&p, &len) &&
            loom::inc::parse(p, len, &r, &text) == loom::inc::parse_error::none &&
            r.kind == loom::inc::packet_kind::stats_reply) {
            std::string s(reinterpret_cast<const char*>(text), r.count);
            size_t at = s.find(std::string(name) + " ");
            return at == std::string::npos ? -3 : std::atol(s.c_str() + at + std::strlen(name) + 1);
        }
    }
    return -4;
}

// Several calls in flight at once: their segments run in (sequence, slot) order on every
// rank, so none waits for one the others have not begun.
void concurrent_case(rank_context& ctx) {
    constexpr int calls = 4;
    constexpr size_t n  = 5000;
    std::vector<int32_t> in[calls], out[calls];
    loom_request_t req[calls];
    loom_coll_attr_t a = inc_attr();
    for (int c = 0; c < calls; ++c) {
        in[c].assign(n, (ctx.rank + 1) * (c + 1));
        out[c].assign(n, 0);
        ctx.check(loom_allreduce(ctx.comm, in[c].data(), out[c].data(), n, LOOM_INT32, LOOM_SUM, &a,
                                 &req[c]) == LOOM_SUCCESS,
                  "start concurrent call " + std::to_string(c));
    }
    for (int c = 0; c < calls; ++c) {
        ctx.check(loom_wait(req[c]) == LOOM_SUCCESS,
                  "concurrent call " + std::to_string(c) + ": " + loom_last_error_message());
        loom_request_free(req[c]);
        ctx.check(out[c][n - 1] == (c + 1) * ctx.size * (ctx.size + 1) / 2,
                  "concurrent call " + std::to_string(c) + " sum");
    }
}

// Two communicators split from this one share the node; each must get its own sums.
void split_case(rank_context& ctx) {
    loom_comm_t half = nullptr;
    ctx.check(loom_comm_split(ctx.comm, ctx.rank % 2, ctx.rank, &half) == LOOM_SUCCESS,
              std::string("split: ") + loom_last_error_message());
    if (half == nullptr) {
        return;
    }
    std::vector<int32_t> in(3000, ctx.rank + 1), out(3000, 0);
    loom_coll_attr_t a = inc_attr();
    ctx.check(loom_allreduce(half, in.data(), out.data(), in.size(), LOOM_INT32, LOOM_SUM, &a,
                             nullptr) == LOOM_SUCCESS,
              std::string("allreduce on the split: ") + loom_last_error_message());
    int32_t want = 0;  // the members of my half: ranks of my parity
    for (int r = ctx.rank % 2; r < ctx.size; r += 2) {
        want += r + 1;
    }
    ctx.check(out[2999] == want, "split communicator sum " + std::to_string(out[2999]) + ", want " +
                                     std::to_string(want));
    loom_comm_destroy(half);
}

void until_failure(rank_context& ctx, size_t n) {
    std::vector<int32_t> in(n, ctx.rank + 1), out(n);
    loom_coll_attr_t a = inc_attr();
    for (int i = 0; i < 100000; ++i) {
        double t0 = loom::now_s();
        loom_status_t st =
            loom_allreduce(ctx.comm, in.data(), out.data(), n, LOOM_INT32, LOOM_SUM, &a, nullptr);
        double took = loom::now_s() - t0;
        if (st == LOOM_SUCCESS) {
            int32_t want = ctx.size * (ctx.size + 1) / 2;
            ctx.check(std::ranges::count(out, want) == static_cast<long>(n),
                      "a call that succeeded returned a wrong sum");
            continue;
        }
        std::string msg = loom_last_error_message();
        std::printf("rank %d: call %d failed after %.2f s: %s\n", ctx.rank, i, took, msg.c_str());
        ctx.check(took < 20, "the failure took " + std::to_string(took) + " s");
        // It is the node that failed: every rank names it, even when another rank's notice
        // reached it first.
        ctx.check(msg.find("aggregation node") != std::string::npos,
                  "the message does not name the aggregation node: " + msg);
        return;
    }
    ctx.check(false, "the switch was never lost");
}

struct inc_options {
    bool full = false, until_failure = false;
};

void inc_workload(rank_context& ctx, const void* raw) {
    const auto& opts = *static_cast<const inc_options*>(raw);
    if (opts.until_failure) {
        until_failure(ctx, 1 << 16);
        return;
    }
    // Sizes around the 8 KiB packet (2048 float32, 1024 float64) and the window.
    std::vector<size_t> counts = {0, 1, 7, 1023, 1024, 1025, 2047, 2048, 2049, 65539};
    if (opts.full) {
        counts.push_back((size_t{16} << 20) / 4 + 3);  // 16 MiB + 12 B of float32
    }
    uint64_t seed = 1;
    for (size_t n : counts) {
        for (loom_dtype_t d : dtypes) {
            for (loom_op_t o : ops) {
                bool big = n > 100000;
                if (big && !(d == LOOM_FLOAT32 && o == LOOM_SUM)) {
                    continue;  // the largest size once, float32 sum
                }
                allreduce_case(ctx, d, o, n, (seed & 1) != 0, seed);
                ++seed;
            }
        }
        reduce_broadcast_case(ctx, LOOM_INT32, LOOM_SUM, n, int(seed % ctx.size), seed);
        reduce_broadcast_case(ctx, LOOM_FLOAT64, LOOM_MAX, n, ctx.size - 1, seed + 1);
        seed += 2;
    }
    if (opts.full) {
        allreduce_case(ctx, LOOM_INT32, LOOM_SUM, (size_t{64} << 20) / 4, false, 77);
    }
    deterministic_case(ctx, 50000);
    concurrent_case(ctx);
    if (!refused && std::getenv("LOOM_SWITCH_FABRIC") == nullptr) {
        split_case(ctx);  // (trees serve the world communicator only)
    }
    // A dtype/op the node does not reduce: an explicit inc fails on every rank alike;
    // the tuner's choice runs it in software.
    explicit_inc_fails(ctx, LOOM_INT8, LOOM_SUM,
                       refused ? "" : "the aggregation node does not reduce this dtype/op");
    if (refused) {
        explicit_inc_fails(ctx, LOOM_FLOAT32, LOOM_SUM, "");
    }
    std::vector<int8_t> in(100, int8_t(ctx.rank)), out(100);
    ctx.check(loom_allreduce(ctx.comm, in.data(), out.data(), 100, LOOM_INT8, LOOM_SUM, nullptr,
                             nullptr) == LOOM_SUCCESS,
              "int8 sum (software)");
    ctx.check(out[5] == int8_t(ctx.size * (ctx.size - 1) / 2), "int8 software result");
    loom_barrier(ctx.comm, nullptr, nullptr);
    if (ctx.rank == 0) {
        long contributions = node_counter("contributions");
        if (!refused) {
            ctx.check(contributions > 0 || contributions == -1,
                      "the node saw " + std::to_string(contributions) + " contributions");
        } else {
            ctx.check(contributions == 0,
                      "a refused communicator contributed " + std::to_string(contributions));
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    inc_options opts;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--expect" && i + 1 < argc) {
            refused = std::string(argv[++i]) == "fallback";
        } else if (a == "--full") {
            opts.full = true;
        } else if (a == "--until-failure") {
            opts.until_failure = true;
        } else {
            std::fprintf(stderr,
                         "usage: test_api_inc [--expect inc|fallback] [--full] "
                         "[--until-failure]\n");
            return 2;
        }
    }
    return run_from_environment(inc_workload, &opts);
}
