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
//   - all-gather and all-to-all: every dtype at small, uneven and slot-filling counts, in
//     place and out of place, every byte checked against the inputs each rank can generate;
//   - 600 back-to-back flat calls cycling all-reduce, all-gather and all-to-all with varying
//     counts, a slow rank and calls of another algorithm between some, each checked exactly;
//   - the tuner picks flat for an 8-byte all-reduce and a one-element-per-rank all-gather
//     and all-to-all, and not above LOOM_FLAT_MAX_BYTES (all-to-all: N blocks per slot).
// Then a rank killed between calls: the others' all-reduce, all-gather or all-to-all ends
// with PEER_FAILURE naming it, well within the deadline, and no process hangs.
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
#include "schedule/collective.hh"
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

// A call that must succeed with exactly `want`'s bytes: else the first byte that differs,
// or loom's error.
void check_bytes(rank_context& ctx, loom_status_t st, const uint8_t* got, const uint8_t* want,
                 size_t bytes, const std::string& call) {
    long bad = st == LOOM_SUCCESS ? first_difference(got, want, bytes) : 0;
    ctx.check(st == LOOM_SUCCESS && bad < 0,
              call + ": " +
                  (st == LOOM_SUCCESS ? "byte " + std::to_string(bad) + " differs"
                                      : loom_last_error_message()));
}

// What back-to-back calls meet: on call k, the last rank is slow when k % slow_every ==
// slow_at (the others finish their calls and overwrite their slots meanwhile), and a ring
// all-reduce runs first when k % ring_every == ring_at (the next flat call then has the same
// parity as the last).
void disturb(rank_context& ctx, int k, int slow_every, int slow_at, int ring_every, int ring_at) {
    if (ctx.rank == ctx.size - 1 && k % slow_every == slow_at) {
        sleep_s(0.003);
    }
    if (k % ring_every == ring_at) {
        int32_t one = 1, sum = 0;
        loom_allreduce(ctx.comm, &one, &sum, 1, LOOM_INT32, LOOM_SUM, &ring_attr, nullptr);
        ctx.check(sum == ctx.size, "ring between flat calls");
    }
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

// Elements per all-to-all block that fill a slot: N blocks of whole 4-byte words.
size_t alltoall_max_count(int nranks, size_t es) {
    return (max_bytes / 4 / size_t(nranks)) * 4 / es;
}

// The gathered vector every rank expects: rank r's block is fill_bytes(seed, r).
std::vector<uint8_t> gathered(uint64_t seed, int nranks, size_t count, size_t es) {
    std::vector<uint8_t> v(count * es);
    for (int r = 0; r < nranks; ++r) {
        const size_t off = size_t(loom::schedule::block_offset(int64_t(count), nranks, r)) * es;
        const size_t len = size_t(loom::schedule::block_size(int64_t(count), nranks, r)) * es;
        fill_bytes(seed, uint64_t(r), v.data() + off, len);
    }
    return v;
}

// All-gather: count 1 (empty blocks on all but rank 0), 7 (uneven), 1000, and the count whose
// blocks fill the slot; in place (sendbuf = recvbuf + block offset) and out of place.
void allgathers(rank_context& ctx) {
    uint64_t seed = 5000;
    for (loom_dtype_t d : dtypes) {
        const size_t es = loom_dtype_size(d);
        for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t(ctx.size) * (max_bytes / es)}) {
            for (bool in_place : {false, true}) {
                ++seed;
                const std::vector<uint8_t> want = gathered(seed, ctx.size, n, es);
                const size_t off =
                    size_t(loom::schedule::block_offset(int64_t(n), ctx.size, ctx.rank)) * es;
                const size_t len =
                    size_t(loom::schedule::block_size(int64_t(n), ctx.size, ctx.rank)) * es;
                std::vector<uint8_t> in(want.begin() + long(off), want.begin() + long(off + len));
                std::vector<uint8_t> out(n * es, pattern);
                if (in_place) {
                    std::copy(in.begin(), in.end(), out.begin() + long(off));
                }
                const void* send = in_place ? out.data() + off : in.data();
                loom_status_t st =
                    loom_allgather(ctx.comm, send, out.data(), n, d, &flat_attr, nullptr);
                check_bytes(ctx, st, out.data(), want.data(), n * es,
                            what("allgather", d, LOOM_SUM, n, in_place, 0));
            }
        }
    }
}

// All-to-all: rank i's block for rank j is fill_bytes(seed, i·N + j); counts 1, 7, 100 and
// the count that fills the slot; in place (sendbuf == recvbuf) and out of place.
void alltoalls(rank_context& ctx) {
    uint64_t seed  = 9000;
    const auto n_r = size_t(ctx.size);
    for (loom_dtype_t d : dtypes) {
        const size_t es = loom_dtype_size(d);
        for (size_t n : {size_t{1}, size_t{7}, size_t{100}, alltoall_max_count(ctx.size, es)}) {
            for (bool in_place : {false, true}) {
                ++seed;
                const size_t blk = n * es;
                std::vector<uint8_t> in(n_r * blk), want(n_r * blk), out(n_r * blk, pattern);
                for (size_t j = 0; j < n_r; ++j) {
                    fill_bytes(seed, size_t(ctx.rank) * n_r + j, in.data() + j * blk, blk);
                    fill_bytes(seed, j * n_r + size_t(ctx.rank), want.data() + j * blk, blk);
                }
                if (in_place) {
                    out = in;
                }
                loom_status_t st = loom_alltoall(ctx.comm, in_place ? out.data() : in.data(),
                                                 out.data(), n, d, &flat_attr, nullptr);
                check_bytes(ctx, st, out.data(), want.data(), n_r * blk,
                            what("alltoall", d, LOOM_SUM, n, in_place, 0));
            }
        }
    }
}

// Back to back, cycling all-reduce, all-gather and all-to-all (flat named, or the tuner's
// choice every third call), counts varying up to each one's slot limit, a slow rank and
// another algorithm now and then; every result checked exactly.
void copies_back_to_back(rank_context& ctx) {
    constexpr int calls = 600;
    const auto n_r      = size_t(ctx.size);
    std::vector<uint8_t> in(max_bytes * n_r), out(max_bytes * n_r), want(max_bytes * n_r);
    for (int k = 0; k < calls; ++k) {
        const auto h                 = size_t(k) * 2654435761u;
        const loom_coll_attr_t* attr = k % 3 == 0 ? nullptr : &flat_attr;
        disturb(ctx, k, 89, 7, 47, 13);
        loom_status_t st = LOOM_SUCCESS;
        size_t bytes     = 0;
        const char* kind = "";
        if (k % 3 == 1) {
            kind                           = "allgather";
            const size_t n                 = 1 + h % (n_r * max_bytes / 4);
            const std::vector<uint8_t> all = gathered(uint64_t(k), ctx.size, n, 4);
            std::copy(all.begin(), all.end(), want.begin());
            const size_t off =
                size_t(loom::schedule::block_offset(int64_t(n), ctx.size, ctx.rank)) * 4;
            bytes = n * 4;
            st    = loom_allgather(ctx.comm, want.data() + off, out.data(), n, LOOM_UINT32, attr,
                                   nullptr);
        } else if (k % 3 == 2) {
            kind           = "alltoall";
            const size_t n = 1 + h % alltoall_max_count(ctx.size, 1);
            for (size_t j = 0; j < n_r; ++j) {
                fill_bytes(uint64_t(k), size_t(ctx.rank) * n_r + j, in.data() + j * n, n);
                fill_bytes(uint64_t(k), j * n_r + size_t(ctx.rank), want.data() + j * n, n);
            }
            bytes = n * n_r;
            st    = loom_alltoall(ctx.comm, in.data(), out.data(), n, LOOM_UINT8, attr, nullptr);
        } else {
            kind           = "allreduce";
            const size_t n = 1 + h % (max_bytes / 8);
            std::vector<int64_t> x(n), r(n);
            for (size_t i = 0; i < n; ++i) {
                x[i] = int64_t(k) * 1000 + ctx.rank * 7 + int64_t(i);
            }
            st = loom_allreduce(ctx.comm, x.data(), r.data(), n, LOOM_INT64, LOOM_SUM, attr,
                                nullptr);
            for (size_t i = 0; i < n; ++i) {
                x[i] = int64_t(ctx.size) * (int64_t(k) * 1000 + int64_t(i)) +
                       7 * int64_t(ctx.size) * (ctx.size - 1) / 2;
            }
            bytes = n * 8;
            std::memcpy(want.data(), x.data(), bytes);
            std::memcpy(out.data(), r.data(), bytes);
        }
        check_bytes(ctx, st, out.data(), want.data(), bytes,
                    "back-to-back call " + std::to_string(k) + " " + kind + " " +
                        std::to_string(bytes) + " B");
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
        disturb(ctx, k, 97, 5, 53, 11);
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
    const auto n_r = size_t(ctx.size);
    st = loom_comm_explain(ctx.comm, LOOM_ALLGATHER, n_r, LOOM_INT32, LOOM_SUM, 0, nullptr, &e,
                           nullptr, 0);
    ctx.check(st == LOOM_SUCCESS && std::string(e.algorithm) == "flat",
              std::string("tuner for a 4-byte-block all-gather chose ") + e.algorithm);
    st = loom_comm_explain(ctx.comm, LOOM_ALLTOALL, 1, LOOM_INT32, LOOM_SUM, 0, nullptr, &e,
                           nullptr, 0);
    ctx.check(st == LOOM_SUCCESS && std::string(e.algorithm) == "flat",
              std::string("tuner for a 4-byte-block all-to-all chose ") + e.algorithm);
    st = loom_comm_explain(ctx.comm, LOOM_ALLGATHER, n_r * (max_bytes / 4 + 1), LOOM_INT32,
                           LOOM_SUM, 0, nullptr, &e, nullptr, 0);
    ctx.check(
        st == LOOM_SUCCESS && std::string(e.algorithm) != "flat",
        std::string("tuner for all-gather blocks over LOOM_FLAT_MAX_BYTES chose ") + e.algorithm);
    // N blocks of max/N bytes + 1 word each no longer fit one slot.
    st = loom_comm_explain(ctx.comm, LOOM_ALLTOALL, alltoall_max_count(ctx.size, 4) + 1, LOOM_INT32,
                           LOOM_SUM, 0, nullptr, &e, nullptr, 0);
    ctx.check(st == LOOM_SUCCESS && std::string(e.algorithm) != "flat",
              std::string("tuner for all-to-all over the slot chose ") + e.algorithm);
    loom_coll_attr_t a = flat_attr;
    std::vector<int32_t> big(max_bytes / 4 + 1), res(big.size());
    st = loom_allreduce(ctx.comm, big.data(), res.data(), big.size(), LOOM_INT32, LOOM_SUM, &a,
                        nullptr);
    ctx.check(st == LOOM_ERR_NOT_APPLICABLE && contains(loom_last_error_message(), "LOOM_FLAT"),
              std::string("explicit flat over the limit: ") + loom_status_string(st) + ": " +
                  loom_last_error_message());
    const size_t over = alltoall_max_count(ctx.size, 4) + 1;
    std::vector<int32_t> a2a_in(over * n_r), a2a_out(over * n_r);
    st = loom_alltoall(ctx.comm, a2a_in.data(), a2a_out.data(), over, LOOM_INT32, &a, nullptr);
    ctx.check(st == LOOM_ERR_NOT_APPLICABLE && contains(loom_last_error_message(), "LOOM_FLAT"),
              std::string("explicit flat all-to-all over the slot: ") + loom_status_string(st) +
                  ": " + loom_last_error_message());
}

void workload(rank_context& ctx, const void*) {
    tuner_choice(ctx);
    reductions(ctx);
    broadcasts(ctx);
    allgathers(ctx);
    alltoalls(ctx);
    back_to_back(ctx);
    copies_back_to_back(ctx);
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

// One flat call of `kind` with one int32 per rank (all-reduce: the sum; all-gather: every
// rank's number; all-to-all: rank i sends i·10 + j to rank j); true when it succeeded with
// the right result.
bool one_call(loom_comm_t comm, call_kind kind, int rank, loom_status_t* st) {
    int32_t x = rank, sum = 0;
    int32_t in[3], out[3] = {-1, -1, -1};
    switch (kind) {
        case call_kind::allgather:
            *st = loom_allgather(comm, &x, out, 3, LOOM_INT32, &flat_attr, nullptr);
            return *st == LOOM_SUCCESS && out[0] == 0 && out[1] == 1 && out[2] == 2;
        case call_kind::alltoall:
            for (int j = 0; j < 3; ++j) {
                in[j] = rank * 10 + j;
            }
            *st = loom_alltoall(comm, in, out, 1, LOOM_INT32, &flat_attr, nullptr);
            return *st == LOOM_SUCCESS && out[0] == rank && out[1] == 10 + rank &&
                   out[2] == 20 + rank;
        default:
            *st = loom_allreduce(comm, &x, &sum, 1, LOOM_INT32, LOOM_SUM, &flat_attr, nullptr);
            return *st == LOOM_SUCCESS && sum == 3;
    }
}

// Rank 2 of 3 kills itself after 20 flat calls of `kind`; the others' 21st ends with
// PEER_FAILURE naming rank 2 within a few seconds (the deadline is 30 s).
void killed_rank_is_named(call_kind kind) {
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
            loom_status_t st = LOOM_SUCCESS;
            for (int k = 0; k < 20; ++k) {
                if (!one_call(comm, kind, rank, &st)) {
                    *report = "call " + std::to_string(k) + " failed: " + loom_status_string(st);
                    return 1;
                }
            }
            if (rank == 2) {
                ::raise(SIGKILL);
            }
            const double t0 = loom::now_s();
            one_call(comm, kind, rank, &st);
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

void killed_rank_is_named_allreduce(void**) {
    killed_rank_is_named(call_kind::allreduce);
}
void killed_rank_is_named_allgather(void**) {
    killed_rank_is_named(call_kind::allgather);
}
void killed_rank_is_named_alltoall(void**) {
    killed_rank_is_named(call_kind::alltoall);
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(flat_n2),
        cmocka_unit_test(flat_n3),
        cmocka_unit_test(flat_n4),
        cmocka_unit_test(flat_n8),
        cmocka_unit_test(killed_rank_is_named_allreduce),
        cmocka_unit_test(killed_rank_is_named_allgather),
        cmocka_unit_test(killed_rank_is_named_alltoall),
    };
    return LOOM_RUN_TESTS("api_flat", tests);
}
