// SPDX-License-Identifier: Apache-2.0
// The flat algorithm (algorithms/flat.cc over the node's flat segment, comm/flat_offload.hh)
// across real processes over shm, N ∈ {2, 3, 4, 8}, one launch per N with many cases each:
//   - every dtype × op at counts 1, 7 and 1000, all-reduce and reduce (roots 0 and N-1), in
//     place and out of place, against the independent reference (reference.hh: integers
//     exact, floats within the reduction's bound); broadcast from roots 0 and N-1;
//   - 1200 back-to-back all-reduces with counts varying from 1 element to the slot's limit,
//     some separated by calls of another algorithm (so consecutive flat calls share a
//     buffer parity), one rank sleeping between some calls (so the others overwrite their
//     slots while it is still behind), each result checked exactly;
//   - the tuner picks flat for an 8-byte all-reduce, and not above LOOM_FLAT_MAX_BYTES.
// Then a rank killed between calls: the others' all-reduce ends with PEER_FAILURE naming it,
// well within the deadline, and no process hangs.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.hh"
#include "base/clock.hh"
#include "proc.hh"
#include "proc_launch.hh"
#include "reference.hh"
#include "test_main.hh"

namespace {

using namespace loom::test::api;
using loom::comm::call_kind;
using loom::test::sleep_s;

constexpr loom_dtype_t dtypes[] = {LOOM_INT8,    LOOM_UINT8,  LOOM_INT32,   LOOM_UINT32,
                                   LOOM_INT64,   LOOM_UINT64, LOOM_FLOAT16, LOOM_BFLOAT16,
                                   LOOM_FLOAT32, LOOM_FLOAT64};
constexpr loom_op_t ops[]       = {LOOM_SUM, LOOM_PROD, LOOM_MIN, LOOM_MAX, LOOM_AVG};
constexpr size_t counts[]       = {1, 7, 1000};
constexpr size_t max_bytes      = 16384;  // LOOM_FLAT_MAX_BYTES's default

const loom_coll_attr_t flat_attr = attr_naming("flat");
const loom_coll_attr_t ring_attr = attr_naming("ring");

std::string what(const char* kind, loom_dtype_t d, loom_op_t o, size_t n, bool in_place, int root) {
    return std::string(kind) + " dtype " + std::to_string(d) + " op " + std::to_string(o) +
           " count " + std::to_string(n) + (in_place ? " in place" : "") + " root " +
           std::to_string(root);
}

void reductions(rank_context& ctx) {
    uint64_t seed = 1;
    for (loom_dtype_t d : dtypes) {
        const size_t es = loom_dtype_size(d);
        for (loom_op_t o : ops) {
            for (size_t n : counts) {
                for (bool in_place : {false, true}) {
                    ++seed;
                    std::vector<uint8_t> in(n * es), out(n * es, pattern);
                    fill_reduction_input(d, o, seed, ctx.rank, in.data(), 0, n);
                    void* send = in_place ? out.data() : in.data();
                    if (in_place) {
                        out = in;
                    }
                    loom_status_t st =
                        loom_allreduce(ctx.comm, send, out.data(), n, d, o, &flat_attr, nullptr);
                    std::string err = st == LOOM_SUCCESS
                                          ? check_reduction(d, o, seed, ctx.size, out.data(), 0, n)
                                          : loom_last_error_message();
                    ctx.check(err.empty(), what("allreduce", d, o, n, in_place, 0) + ": " + err);
                    for (int root : {0, ctx.size - 1}) {
                        ++seed;
                        fill_reduction_input(d, o, seed, ctx.rank, in.data(), 0, n);
                        std::fill(out.begin(), out.end(), pattern);
                        if (in_place) {
                            out = in;
                        }
                        st  = loom_reduce(ctx.comm, send, out.data(), n, d, o, root, &flat_attr,
                                          nullptr);
                        err = st != LOOM_SUCCESS ? loom_last_error_message()
                              : ctx.rank == root
                                  ? check_reduction(d, o, seed, ctx.size, out.data(), 0, n)
                                  : "";
                        ctx.check(err.empty(),
                                  what("reduce", d, o, n, in_place, root) + ": " + err);
                    }
                }
            }
        }
    }
}

void broadcasts(rank_context& ctx) {
    for (size_t bytes : {size_t{1}, size_t{7}, size_t{1000}, max_bytes}) {
        for (int root : {0, ctx.size - 1}) {
            std::vector<uint8_t> want(bytes), buf(bytes, pattern);
            fill_bytes(bytes * 31 + uint64_t(root), 7, want.data(), bytes);
            if (ctx.rank == root) {
                buf = want;
            }
            loom_status_t st = loom_broadcast(ctx.comm, buf.data(), buf.data(), bytes, LOOM_UINT8,
                                              root, &flat_attr, nullptr);
            ctx.check(st == LOOM_SUCCESS && first_difference(buf.data(), want.data(), bytes) < 0,
                      "broadcast " + std::to_string(bytes) + " B from " + std::to_string(root) +
                          ": " + (st == LOOM_SUCCESS ? "wrong bytes" : loom_last_error_message()));
        }
    }
}

// Back to back, varying counts, exact integer sums: element i of rank r in call k is
// (k * 7 + r * 13 + i) mod 2^31, so the sum over ranks is known.
void back_to_back(rank_context& ctx) {
    constexpr int calls = 1200;
    std::vector<int32_t> in(max_bytes / 4), out(max_bytes / 4);
    for (int k = 0; k < calls; ++k) {
        const size_t n = size_t(1) + (size_t(k) * 2654435761u) % (max_bytes / 4);
        for (size_t i = 0; i < n; ++i) {
            in[i] = int32_t((k * 7 + ctx.rank * 13 + int(i)) & 0x7fffffff);
        }
        // The slow rank: the others finish their calls and overwrite their slots meanwhile.
        if (ctx.rank == ctx.size - 1 && k % 97 == 5) {
            sleep_s(0.003);
        }
        // Another algorithm now and then: the next flat call has the same parity as the last.
        if (k % 53 == 11) {
            int32_t one = 1, sum = 0;
            loom_allreduce(ctx.comm, &one, &sum, 1, LOOM_INT32, LOOM_SUM, &ring_attr, nullptr);
            ctx.check(sum == ctx.size, "ring between flat calls");
        }
        loom_status_t st = loom_allreduce(ctx.comm, in.data(), out.data(), n, LOOM_INT32, LOOM_SUM,
                                          k % 3 == 0 ? nullptr : &flat_attr, nullptr);
        bool ok          = st == LOOM_SUCCESS;
        for (size_t i = 0; ok && i < n; ++i) {
            int64_t want = 0;
            for (int r = 0; r < ctx.size; ++r) {
                want += (k * 7 + r * 13 + int64_t(i)) & 0x7fffffff;
            }
            ok = out[i] == int32_t(uint32_t(uint64_t(want)));
        }
        ctx.check(ok, "back-to-back call " + std::to_string(k) + " count " + std::to_string(n) +
                          ": " + (st == LOOM_SUCCESS ? "wrong sum" : loom_last_error_message()));
    }
}

void tuner_choice(rank_context& ctx) {
    loom_explain_t e;
    e.struct_size    = sizeof e;
    loom_status_t st = loom_comm_explain(ctx.comm, LOOM_ALLREDUCE, 2, LOOM_INT32, LOOM_SUM, 0,
                                         nullptr, &e, nullptr, 0);
    ctx.check(st == LOOM_SUCCESS && std::string(e.algorithm) == "flat",
              std::string("tuner at 8 B chose ") + e.algorithm);
    st = loom_comm_explain(ctx.comm, LOOM_ALLREDUCE, max_bytes, LOOM_INT32, LOOM_SUM, 0, nullptr,
                           &e, nullptr, 0);
    ctx.check(st == LOOM_SUCCESS && std::string(e.algorithm) != "flat",
              std::string("tuner over LOOM_FLAT_MAX_BYTES chose ") + e.algorithm);
    loom_coll_attr_t a = flat_attr;
    std::vector<int32_t> big(max_bytes / 4 + 1), res(big.size());
    st = loom_allreduce(ctx.comm, big.data(), res.data(), big.size(), LOOM_INT32, LOOM_SUM, &a,
                        nullptr);
    ctx.check(st == LOOM_ERR_NOT_APPLICABLE && contains(loom_last_error_message(), "LOOM_FLAT"),
              std::string("explicit flat over the limit: ") + loom_status_string(st) + ": " +
                  loom_last_error_message());
}

void workload(rank_context& ctx, const void*) {
    tuner_choice(ctx);
    reductions(ctx);
    broadcasts(ctx);
    back_to_back(ctx);
}

void flat_n(int n) {
    launch_options o;
    o.nranks    = n;
    o.timeout_s = 600;
    expect_launch_ok(o, workload, nullptr, ("flat N=" + std::to_string(n)).c_str());
}

void flat_n2(void**) {
    flat_n(2);
}
void flat_n3(void**) {
    flat_n(3);
}
void flat_n4(void**) {
    flat_n(4);
}
void flat_n8(void**) {
    flat_n(8);
}

// Rank 2 of 3 kills itself after 20 flat all-reduces; the others' 21st ends with
// PEER_FAILURE naming rank 2 within a few seconds (the deadline is 30 s).
void killed_rank_is_named(void**) {
    char tmpl[] = "/tmp/loom-flat-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        LOOM_FAIL(std::string("mkdtemp failed"));
    }
    const std::string dir = tmpl, job = "flatkill-" + std::to_string(getpid());
    std::fflush(stdout);
    auto out = loom::test::run_ranks(
        3,
        [&](int rank, std::string* report) {
            loom_config_t cfg;
            loom_config_init(&cfg);
            std::string boot = "file:" + dir;
            cfg.rank         = rank;
            cfg.size         = 3;
            cfg.bootstrap    = boot.c_str();
            cfg.job          = job.c_str();
            cfg.transport    = "shm";
            cfg.timeout_s    = 30;
            loom_comm_t comm = nullptr;
            if (loom_comm_create(&cfg, &comm) != LOOM_SUCCESS) {
                *report = std::string("create: ") + loom_last_error_message();
                return 1;
            }
            int32_t x = rank, sum = 0;
            for (int k = 0; k < 20; ++k) {
                if (loom_allreduce(comm, &x, &sum, 1, LOOM_INT32, LOOM_SUM, &flat_attr, nullptr) !=
                        LOOM_SUCCESS ||
                    sum != 3) {
                    *report = "call " + std::to_string(k) + " failed";
                    return 1;
                }
            }
            if (rank == 2) {
                ::raise(SIGKILL);
            }
            const double t0 = loom::now_s();
            loom_status_t st =
                loom_allreduce(comm, &x, &sum, 1, LOOM_INT32, LOOM_SUM, &flat_attr, nullptr);
            const double took = loom::now_s() - t0;
            std::string msg   = loom_last_error_message();
            *report = std::string(loom_status_string(st)) + " after " + std::to_string(took) +
                      " s: " + msg;
            loom_comm_destroy(comm);
            return st == LOOM_ERR_PEER_FAILURE && took < 5 && contains(msg.c_str(), "rank 2") ? 0
                                                                                              : 1;
        },
        60);
    for (int r = 0; r < 3; ++r) {
        std::printf("# rank %d: exit %d: %s\n", r, out[size_t(r)].code,
                    out[size_t(r)].text.c_str());
    }
    if (out[0].code != 0 || out[1].code != 0 || out[2].code != 128 + SIGKILL) {
        LOOM_FAIL(
            std::string("a survivor did not name the killed rank in time, or rank 2 was not "
                        "killed"));
    }
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(flat_n2),
        cmocka_unit_test(flat_n3),
        cmocka_unit_test(flat_n4),
        cmocka_unit_test(flat_n8),
        cmocka_unit_test(killed_rank_is_named),
    };
    return LOOM_RUN_TESTS("api_flat", tests);
}
