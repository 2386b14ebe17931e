// SPDX-License-Identifier: Apache-2.0
// peers_gloo: times Gloo's collectives (TCP transport on loopback) the way peers_mpi times
// MPI's, one row per algorithm Gloo offers for the collective.
//
// Usage: RANK=r SIZE=N STORE=DIR peers_gloo COLLECTIVE SIZE:ITERS:WARMUP[:BUDGET_S]...
// The script starts the N ranks as background processes; they meet through a
// gloo::rendezvous::FileStore in DIR. Sizes, timing and the CSV row are those of
// peers_mpi.c, with library = gloo-<algorithm>. Algorithms: allreduce ring, ring_chunked,
// halving_doubling, bcube; allgather ring (AllgatherRing) and allgather (gloo::allgather);
// broadcast one_to_all (BroadcastOneToAll) and broadcast (gloo::broadcast); alltoall
// (gloo::alltoall); reduce_scatter halving_doubling (ReduceScatterHalvingDoubling). The
// warm-up calls are cut and their time cuts ITERS to fit BUDGET_S seconds, as there. The
// algorithm classes are built once per size, outside the timed calls; the option-style
// calls (gloo::allgather, ...) build their options per call, as their users do.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gloo/allgather.h"
#include "gloo/allgather_ring.h"
#include "gloo/allreduce.h"
#include "gloo/allreduce_bcube.h"
#include "gloo/allreduce_halving_doubling.h"
#include "gloo/allreduce_ring.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/alltoall.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/broadcast_one_to_all.h"
#include "gloo/reduce_scatter.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "timing.h"

namespace {

using context_ptr = std::shared_ptr<gloo::Context>;

struct spec {
    size_t bytes;
    int iters, warmup;
    double budget;
};

// One algorithm on one size: `call` runs one collective.
struct variant {
    std::string name;
    std::function<void()> call;
};

// The variants of `coll` on `bytes` bytes of float32 from `in` to `out`.
std::vector<variant> variants(const std::string& coll, const context_ptr& ctx, float* in,
                              float* out, size_t bytes) {
    int n = ctx->size, count = static_cast<int>(bytes / sizeof(float)), piece = count / n;
    std::vector<variant> v;
    auto algorithm = [&](const char* name, std::shared_ptr<gloo::Algorithm> a) {
        v.push_back({name, [a] { a->run(); }});
    };
    if (coll == "allreduce") {
        std::vector<float*> ptrs{in};
        algorithm("ring", std::make_shared<gloo::AllreduceRing<float>>(ctx, ptrs, count));
        algorithm("ring_chunked",
                  std::make_shared<gloo::AllreduceRingChunked<float>>(ctx, ptrs, count));
        algorithm("halving_doubling",
                  std::make_shared<gloo::AllreduceHalvingDoubling<float>>(ctx, ptrs, count));
        algorithm("bcube", std::make_shared<gloo::AllreduceBcube<float>>(ctx, ptrs, count));
    } else if (coll == "allgather") {
        std::vector<const float*> ptrs{in};
        algorithm("ring", std::make_shared<gloo::AllgatherRing<float>>(ctx, ptrs, out, piece));
        v.push_back({"allgather", [=] {
                         gloo::AllgatherOptions o(ctx);
                         o.setInput(in, static_cast<size_t>(piece));
                         o.setOutput(out, static_cast<size_t>(piece) * static_cast<size_t>(n));
                         gloo::allgather(o);
                     }});
    } else if (coll == "broadcast") {
        std::vector<float*> ptrs{in};
        algorithm("one_to_all", std::make_shared<gloo::BroadcastOneToAll<float>>(ctx, ptrs, count));
        v.push_back({"broadcast", [=] {
                         gloo::BroadcastOptions o(ctx);
                         if (ctx->rank == 0) {
                             o.setInput(in, static_cast<size_t>(count));
                         }
                         o.setOutput(out, static_cast<size_t>(count));
                         o.setRoot(0);
                         gloo::broadcast(o);
                     }});
    } else if (coll == "alltoall") {
        v.push_back({"alltoall", [=] {
                         size_t all = static_cast<size_t>(piece) * static_cast<size_t>(n);
                         gloo::AlltoallOptions o(ctx);
                         o.setInput(in, all);
                         o.setOutput(out, all);
                         gloo::alltoall(o);
                     }});
    } else if (coll == "reduce_scatter") {
        std::vector<float*> ptrs{in};
        std::vector<int> recv(static_cast<size_t>(n), piece);
        algorithm("halving_doubling", std::make_shared<gloo::ReduceScatterHalvingDoubling<float>>(
                                          ctx, ptrs, piece * n, recv));
    }
    return v;
}

// The elementwise maximum over ranks of `v`, in place.
void max_over_ranks(const context_ptr& ctx, std::vector<double>* v) {
    gloo::AllreduceOptions o(ctx);
    o.setOutput(v->data(), v->size());
    o.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
    gloo::allreduce(o);
}

void barrier(const context_ptr& ctx) {
    gloo::BarrierOptions o(ctx);
    gloo::barrier(o);
}

// `calls` warm-up calls, each after a barrier; their time, the maximum over ranks.
double warm_up(const context_ptr& ctx, const variant& v, int calls) {
    double t0 = now_s();
    for (int i = 0; i < calls; ++i) {
        barrier(ctx);
        v.call();
    }
    std::vector<double> spent{now_s() - t0};
    max_over_ranks(ctx, &spent);
    return spent[0];
}

void time_variant(const context_ptr& ctx, const std::string& coll, const variant& v,
                  const spec& s) {
    // Warm-up and the budget as in peers_mpi.c (timing.h).
    double first    = warm_up(ctx, v, s.warmup > 0 ? 1 : 0);
    int more        = more_warmups(s.warmup, s.budget, first);
    double per_call = more > 0 ? warm_up(ctx, v, more) / more : first;
    int iters       = iters_in_budget(s.iters, s.budget, per_call);
    if (iters < s.iters && ctx->rank == 0) {
        std::fprintf(stderr, "gloo-%s %s N=%d %zu B: %d of %d iterations (budget %.1f s)\n",
                     v.name.c_str(), coll.c_str(), ctx->size, s.bytes, iters, s.iters, s.budget);
    }
    std::vector<double> enter(static_cast<size_t>(iters)), leave(enter.size());
    for (size_t i = 0; i < enter.size(); ++i) {
        barrier(ctx);
        enter[i] = now_s();
        v.call();
        leave[i] = now_s();
    }
    max_over_ranks(ctx, &enter);
    max_over_ranks(ctx, &leave);
    if (ctx->rank != 0) {
        return;
    }
    std::vector<double> us(enter.size());
    for (size_t i = 0; i < us.size(); ++i) {
        us[i] = (leave[i] - enter[i]) * 1e6;
    }
    double p50, p99, mean;
    summarize(us.data(), us.size(), &p50, &p99, &mean);
    std::printf("gloo-%s,%s,%d,%zu,%.2f,%.2f,%.2f\n", v.name.c_str(), coll.c_str(), ctx->size,
                s.bytes, p50, p99, mean);
    std::fflush(stdout);
}

int env_int(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::atoi(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
    int rank = env_int("RANK"), n = env_int("SIZE");
    const char* store = std::getenv("STORE");
    std::vector<spec> specs;
    for (int a = 2; a < argc; ++a) {
        spec s{};
        if (std::sscanf(argv[a], "%zu:%d:%d:%lf", &s.bytes, &s.iters, &s.warmup, &s.budget) < 3 ||
            s.iters < 1) {
            std::fprintf(stderr, "peers_gloo: bad size spec '%s'\n", argv[a]);
            return 2;
        }
        specs.push_back(s);
    }
    if (argc < 3 || rank < 0 || n < 1 || rank >= n || store == nullptr) {
        std::fprintf(stderr,
                     "usage: RANK=r SIZE=N STORE=DIR peers_gloo COLLECTIVE "
                     "SIZE:ITERS:WARMUP[:BUDGET_S]...\n");
        return 2;
    }
    std::string coll = argv[1];
    size_t alloc     = 64;
    for (const spec& s : specs) {
        alloc = std::max(alloc, s.bytes);
    }
    std::vector<float> in(alloc / sizeof(float)), out(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        in[i] = static_cast<float>(1 + (i + static_cast<size_t>(rank)) % 16);
    }

    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev      = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore fs(store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
    ctx->setTimeout(std::chrono::seconds(600));
    ctx->connectFullMesh(fs, dev);
    context_ptr base = ctx;

    // Settle as loom-bench does: 1000 barriers before the first size.
    for (int i = 0; i < 1000; ++i) {
        barrier(base);
    }
    for (const spec& s : specs) {
        for (const variant& v : variants(coll, base, in.data(), out.data(), s.bytes)) {
            time_variant(base, coll, v, s);
        }
    }
    return 0;
}
