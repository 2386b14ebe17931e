// SPDX-License-Identifier: Apache-2.0
#include "sweep_cases.hh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "api_test_util.hh"
#include "base/clock.hh"
#include "reference.hh"
#include "schedule/collective.hh"

namespace loom::test::api {
namespace {

using comm::call_kind;
using bytes = std::vector<uint8_t>;

size_t block_size(size_t count, int n, int i) {
    return static_cast<size_t>(schedule::block_size(static_cast<int64_t>(count), n, i));
}
size_t block_offset(size_t count, int n, int i) {
    return static_cast<size_t>(schedule::block_offset(static_cast<int64_t>(count), n, i));
}

// Calls through the C API with the case's attribute; NULL for a zero-length buffer is
// fine (count 0), so empty vectors pass their data() as is.
loom_status_t issue(rank_context& ctx, const sweep_case& c, const void* in, void* out) {
    loom_coll_attr_t attr = attr_naming(c.algorithm.empty() ? nullptr : c.algorithm.c_str());
    attr.segments         = c.segments;
    attr.channels         = c.channels;
    return call(ctx.comm, c.kind, in, out, c.count, c.dtype, c.op, &attr, nullptr, c.root);
}

bool ok_status(rank_context& ctx, const sweep_case& c, loom_status_t st, const char* variant) {
    ctx.check(st == LOOM_SUCCESS, c.describe() + " " + variant + ": " + loom_status_string(st) +
                                      ": " + loom_last_error_message());
    return st == LOOM_SUCCESS;
}

void check_same(rank_context& ctx, const sweep_case& c, const bytes& a, const bytes& b,
                const char* what) {
    long at = first_difference(a.data(), b.data(), a.size());
    ctx.check(a.size() == b.size() && at < 0,
              c.describe() + ": " + what + " differs at byte " + std::to_string(at));
}

// reduce, allreduce, reduce_scatter.
void run_reduction(rank_context& ctx, const sweep_case& c) {
    size_t e = loom_dtype_size(c.dtype);
    bytes in(c.count * e);
    fill_reduction_input(c.dtype, c.op, c.seed, ctx.rank, in.data(), 0, c.count);
    size_t first = 0, n = c.count;
    if (c.kind == call_kind::reduce_scatter) {
        first = block_offset(c.count, ctx.size, ctx.rank);
        n     = block_size(c.count, ctx.size, ctx.rank);
    }
    bool has_result = c.kind != call_kind::reduce || ctx.rank == c.root;
    bytes out(n * e, pattern);
    if (!ok_status(ctx, c, issue(ctx, c, in.data(), out.data()), "out of place")) {
        return;
    }
    if (has_result) {
        std::string bad = check_reduction(c.dtype, c.op, c.seed, ctx.size, out.data(), first, n);
        ctx.check(bad.empty(), c.describe() + ": " + bad);
    } else {
        ctx.check(intact(out), c.describe() + ": a non-root's recvbuf was written");
    }
    // In place: the input buffer receives the result (reduce_scatter: at its start).
    bytes io = in;
    if (!ok_status(ctx, c, issue(ctx, c, io.data(), io.data()), "in place")) {
        return;
    }
    if (has_result) {
        check_same(ctx, c, bytes(io.begin(), io.begin() + static_cast<long>(n * e)), out,
                   "in place vs out of place");
    }
}

// The call out of place (into a pattern-filled recvbuf) and in place (`io` holds the input
// at byte `io_in` and receives the result), each result checked against `want`.
void run_both_ways(rank_context& ctx, const sweep_case& c, const void* in, bytes io, size_t io_in,
                   const bytes& want, const std::string& what) {
    bytes out(want.size(), pattern);
    if (ok_status(ctx, c, issue(ctx, c, in, out.data()), "out of place")) {
        check_same(ctx, c, out, want, what.c_str());
    }
    void* at = io.empty() ? nullptr : io.data() + io_in;  // no arithmetic on a null pointer
    if (ok_status(ctx, c, issue(ctx, c, at, io.data()), "in place")) {
        check_same(ctx, c, io, want, ("in-place " + what).c_str());
    }
}

void run_broadcast(rank_context& ctx, const sweep_case& c) {
    size_t b = c.count * loom_dtype_size(c.dtype);
    bytes data(b);
    fill_bytes(c.seed, static_cast<uint64_t>(c.root), data.data(), b);
    bool root = ctx.rank == c.root;
    run_both_ways(ctx, c, root ? data.data() : nullptr, root ? data : bytes(b, pattern), 0, data,
                  "root's data");
}

void run_allgather(rank_context& ctx, const sweep_case& c) {
    size_t e = loom_dtype_size(c.dtype), b = c.count * e;
    bytes whole(b);
    fill_bytes(c.seed, 999, whole.data(), b);
    size_t off = block_offset(c.count, ctx.size, ctx.rank) * e;
    size_t len = block_size(c.count, ctx.size, ctx.rank) * e;
    bytes mine(whole.begin() + static_cast<long>(off),
               whole.begin() + static_cast<long>(off + len));
    // In place: sendbuf is this rank's block inside recvbuf.
    bytes io(b, pattern);
    std::copy(mine.begin(), mine.end(), io.begin() + static_cast<long>(off));
    run_both_ways(ctx, c, mine.data(), io, off, whole, "gathered vector");
}

void run_alltoall(rank_context& ctx, const sweep_case& c) {
    size_t e = loom_dtype_size(c.dtype), slice = c.count * e;
    size_t b = slice * static_cast<size_t>(ctx.size);
    bytes in(b), want(b);
    fill_bytes(c.seed, static_cast<uint64_t>(ctx.rank), in.data(), b);
    bytes theirs(b);
    for (int j = 0; j < ctx.size; ++j) {
        fill_bytes(c.seed, static_cast<uint64_t>(j), theirs.data(), b);
        auto from = theirs.begin() + static_cast<long>(slice * static_cast<size_t>(ctx.rank));
        std::copy(from, from + static_cast<long>(slice),
                  want.begin() + static_cast<long>(slice * static_cast<size_t>(j)));
    }
    run_both_ways(ctx, c, in.data(), in, 0, want, "received slices");
}

}  // namespace

std::string sweep_case::describe() const {
    return std::string(comm::kind_name(kind)) + " " +
           (algorithm.empty() ? std::string("(default)") : algorithm) +
           " count=" + std::to_string(count) + " dtype=" + std::to_string(dtype) +
           " op=" + std::to_string(op) + " root=" + std::to_string(root) +
           (segments ? " P=" + std::to_string(segments) : "") +
           (channels ? " C=" + std::to_string(channels) : "");
}

void run_case(rank_context& ctx, const sweep_case& c) {
    if (comm::kind_reduces(c.kind)) {
        run_reduction(ctx, c);
    } else if (c.kind == call_kind::broadcast) {
        run_broadcast(ctx, c);
    } else if (c.kind == call_kind::allgather) {
        run_allgather(ctx, c);
    } else if (c.kind == call_kind::alltoall) {
        run_alltoall(ctx, c);
    } else {
        ctx.report("run_case: unexpected kind");
    }
}

void run_p2p(rank_context& ctx, uint64_t seed) {
    if (ctx.size < 2) {
        return;
    }
    int right = (ctx.rank + 1) % ctx.size, left = (ctx.rank + ctx.size - 1) % ctx.size;
    constexpr int messages = 3;  // per pair and count: they must arrive in order
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{65539}}) {
        std::vector<bytes> out(messages), in(messages, bytes(count * 4, pattern));
        loom_request_t reqs[2 * messages];
        for (int m = 0; m < messages; ++m) {
            out[m].resize(count * 4);
            fill_bytes(seed + static_cast<uint64_t>(m), static_cast<uint64_t>(ctx.rank),
                       out[m].data(), out[m].size());
            ctx.check(loom_recv(ctx.comm, in[m].data(), count, LOOM_FLOAT32, left, nullptr,
                                &reqs[2 * m]) == LOOM_SUCCESS,
                      std::string("recv start: ") + loom_last_error_message());
            ctx.check(loom_send(ctx.comm, out[m].data(), count, LOOM_FLOAT32, right, nullptr,
                                &reqs[2 * m + 1]) == LOOM_SUCCESS,
                      std::string("send start: ") + loom_last_error_message());
        }
        for (auto& r : reqs) {
            loom_status_t st = loom_wait(r);
            ctx.check(st == LOOM_SUCCESS,
                      "p2p count " + std::to_string(count) + ": " + loom_last_error_message());
            loom_request_free(r);
        }
        for (int m = 0; m < messages; ++m) {
            bytes want(count * 4);
            fill_bytes(seed + static_cast<uint64_t>(m), static_cast<uint64_t>(left), want.data(),
                       want.size());
            ctx.check(first_difference(in[m].data(), want.data(), want.size()) < 0,
                      "p2p message " + std::to_string(m) + " from rank " + std::to_string(left) +
                          " count " + std::to_string(count) + " differs");
        }
    }
}

void run_concurrent(rank_context& ctx, uint64_t seed) {
    const size_t n = 1000;
    int N          = ctx.size;
    bytes ar_in(n * 8), ar_out(n * 8, pattern), bc(n * 4), bc_data(n * 4);
    bytes ag_whole(n * 2), ag_out(n * 2, pattern), rs_out(block_size(n, N, ctx.rank) * 8, pattern);
    bytes a2a_in(n * 4 * static_cast<size_t>(N)), a2a_out(a2a_in.size(), pattern);
    fill_reduction_input(LOOM_INT64, LOOM_SUM, seed, ctx.rank, ar_in.data(), 0, n);
    fill_bytes(seed, 7, bc_data.data(), bc_data.size());
    bc = ctx.rank == N - 1 ? bc_data : bytes(bc.size(), pattern);
    fill_bytes(seed, 998, ag_whole.data(), ag_whole.size());
    size_t off = block_offset(n, N, ctx.rank) * 2;
    fill_bytes(seed + 1, static_cast<uint64_t>(ctx.rank), a2a_in.data(), a2a_in.size());
    loom_request_t r[5];
    loom_status_t st[5] = {
        loom_allreduce(ctx.comm, ar_in.data(), ar_out.data(), n, LOOM_INT64, LOOM_SUM, nullptr,
                       &r[0]),
        loom_broadcast(ctx.comm, bc.data(), bc.data(), n, LOOM_FLOAT32, N - 1, nullptr, &r[1]),
        loom_allgather(ctx.comm, ag_whole.data() + off, ag_out.data(), n, LOOM_BFLOAT16, nullptr,
                       &r[2]),
        loom_reduce_scatter(ctx.comm, ar_in.data(), rs_out.data(), n, LOOM_INT64, LOOM_SUM, nullptr,
                            &r[3]),
        loom_alltoall(ctx.comm, a2a_in.data(), a2a_out.data(), n / static_cast<size_t>(N) + 1,
                      LOOM_INT8, nullptr, &r[4]),
    };
    for (int i = 4; i >= 0; --i) {  // completed in the reverse order of starting
        ctx.check(st[i] == LOOM_SUCCESS && loom_wait(r[i]) == LOOM_SUCCESS,
                  "concurrent call " + std::to_string(i) + ": " + loom_last_error_message());
        loom_request_free(r[i]);
    }
    std::string bad = check_reduction(LOOM_INT64, LOOM_SUM, seed, N, ar_out.data(), 0, n);
    ctx.check(bad.empty(), "concurrent allreduce: " + bad);
    bad = check_reduction(LOOM_INT64, LOOM_SUM, seed, N, rs_out.data(),
                          block_offset(n, N, ctx.rank), block_size(n, N, ctx.rank));
    ctx.check(bad.empty(), "concurrent reduce_scatter: " + bad);
    ctx.check(bc == bc_data, "concurrent broadcast differs");
    ctx.check(ag_out == ag_whole, "concurrent allgather differs");
}

void run_back_to_back(rank_context& ctx, int iterations) {
    int64_t n = ctx.size;
    double t0 = now_s();
    for (int it = 0; it < iterations; ++it) {
        int64_t in = ctx.rank + it, out = -1;
        loom_status_t st =
            loom_allreduce(ctx.comm, &in, &out, 1, LOOM_INT64, LOOM_SUM, nullptr, nullptr);
        int64_t want = n * (n - 1) / 2 + n * it;
        if (st != LOOM_SUCCESS || out != want) {
            ctx.report("back-to-back allreduce " + std::to_string(it) + ": " +
                       loom_status_string(st) + " got " + std::to_string(out) + " want " +
                       std::to_string(want) + " " + loom_last_error_message());
            return;
        }
        ++ctx.checks;
    }
    if (ctx.rank == 0) {  // a TAP comment: how long one small call takes here
        std::printf("# N=%d: %d back-to-back 8-byte allreduces, %.1f us each\n", ctx.size,
                    iterations, (now_s() - t0) / iterations * 1e6);
        std::fflush(stdout);
    }
}

void run_split(rank_context& ctx) {
    loom_comm_t child = nullptr;
    int color = ctx.rank % 2, key = -ctx.rank;
    loom_status_t st = loom_comm_split(ctx.comm, color, key, &child);
    ctx.check(st == LOOM_SUCCESS && child, std::string("split: ") + loom_last_error_message());
    if (!child) {
        return;
    }
    // Members of my color in descending parent rank (keys -rank ascending).
    std::vector<int> members;
    for (int r = ctx.size - 1; r >= 0; --r) {
        if (r % 2 == color) {
            members.push_back(r);
        }
    }
    auto want_rank = static_cast<int>(std::ranges::find(members, ctx.rank) - members.begin());
    ctx.check(loom_comm_size(child) == static_cast<int>(members.size()) &&
                  loom_comm_rank(child) == want_rank,
              "split: child rank/size " + std::to_string(loom_comm_rank(child)) + "/" +
                  std::to_string(loom_comm_size(child)));
    int64_t mine = ctx.rank, sum = -1, want = std::accumulate(members.begin(), members.end(), 0);
    st = loom_allreduce(child, &mine, &sum, 1, LOOM_INT64, LOOM_SUM, nullptr, nullptr);
    ctx.check(st == LOOM_SUCCESS && sum == want,
              "split allreduce: got " + std::to_string(sum) + " want " + std::to_string(want));
    int64_t top = ctx.rank;
    st          = loom_broadcast(child, &top, &top, 1, LOOM_INT64, 0, nullptr, nullptr);
    ctx.check(st == LOOM_SUCCESS && top == members[0], "split broadcast from child rank 0");
    loom_comm_destroy(child);
    // The parent still works after the split.
    ctx.check(loom_barrier(ctx.comm, nullptr, nullptr) == LOOM_SUCCESS,
              std::string("barrier after split: ") + loom_last_error_message());
}

}  // namespace loom::test::api
