// SPDX-License-Identifier: Apache-2.0
// Link-counter checks over a fabric (fabric_checks.hh).
//
// Measuring one call. A rank's counters also move when other ranks' traffic passes through
// it, so a window is closed by a `dims` all-reduce of one element: dims talks to direct
// neighbours only (nothing of it is forwarded), and once it returns on this rank every rank
// has entered it, i.e. finished the call before it, whose messages have therefore all
// arrived: nothing of that call is still travelling through this rank. The window
// sync · A · call · sync · B then holds exactly the call plus one sync, and the sync's own
// share is measured alone the same way (its schedule is the same every time).
#include "fabric_checks.hh"

#include <loom/loom.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/algorithm.hh"
#include "api_test_util.hh"
#include "schedule/schedule.hh"

namespace loom::test::api {
namespace {

std::string where(const rank_context& ctx, const char* what, int peer) {
    return std::string(what) + ": rank " + std::to_string(ctx.rank) + " -> " + std::to_string(peer);
}

bool sync(rank_context& ctx) {
    int32_t one = 1, all = 0;
    loom_coll_attr_t a = attr_naming("dims");
    loom_status_t st   = loom_allreduce(ctx.comm, &one, &all, 1, LOOM_INT32, LOOM_SUM, &a, nullptr);
    ctx.check(st == LOOM_SUCCESS && all == ctx.size,
              std::string("dims sync: ") + loom_status_string(st));
    return st == LOOM_SUCCESS;
}

std::vector<loom_link_stat_t> snapshot(rank_context& ctx) {
    int n            = 0;
    loom_status_t st = loom_comm_link_stats(ctx.comm, nullptr, 0, &n);
    std::vector<loom_link_stat_t> v(static_cast<size_t>(n));
    if (st == LOOM_SUCCESS && n > 0) {
        st = loom_comm_link_stats(ctx.comm, v.data(), n, &n);
    }
    ctx.check(st == LOOM_SUCCESS, std::string("loom_comm_link_stats: ") + loom_status_string(st));
    return v;
}

// What `call` moved on each link: sync · A · sync · B · call · sync · C, so C − B holds the
// call and one sync, and B − A is the sync's share alone.
template <typename Call>
std::vector<loom_link_stat_t> moved_by(rank_context& ctx, Call call) {
    sync(ctx);
    auto a = snapshot(ctx);
    sync(ctx);
    auto b = snapshot(ctx);
    call();
    sync(ctx);
    auto c = snapshot(ctx);
    for (size_t i = 0; i < c.size() && i < b.size() && i < a.size(); ++i) {
        c[i].sent_bytes -= 2 * b[i].sent_bytes - a[i].sent_bytes;
        c[i].forwarded_msgs -= 2 * b[i].forwarded_msgs - a[i].forwarded_msgs;
    }
    return c;
}

// The dimension along which a and b are neighbours; -1 if they differ elsewhere too.
int link_dim(const topology::shape& s, int a, int b) {
    auto ca = s.coords(a), cb = s.coords(b);
    int dim = -1;
    for (size_t i = 0; i < ca.size(); ++i) {
        if (ca[i] != cb[i]) {
            if (dim >= 0) {
                return -1;
            }
            dim = static_cast<int>(i);
        }
    }
    return dim >= 0 && s.neighbour(a, dim, 1) != b && s.neighbour(a, dim, -1) != b ? -1 : dim;
}

}  // namespace

void check_links_are_neighbours(rank_context& ctx, const topology::shape& fabric) {
    auto links = snapshot(ctx);
    auto want  = fabric.neighbours(ctx.rank);
    ctx.check(links.size() == want.size(), "rank " + std::to_string(ctx.rank) + " has " +
                                               std::to_string(links.size()) + " links, expected " +
                                               std::to_string(want.size()));
    for (size_t i = 0; i < links.size() && i < want.size(); ++i) {
        ctx.check(links[i].peer == want[i], where(ctx, "link to a non-neighbour", links[i].peer));
    }
}

void check_dor_relay_link_loads(rank_context& ctx, const topology::shape& fabric,
                                routing::tie_rule ties, int segments) {
    const size_t block = 1000;  // float32 per (source, destination) pair
    auto n             = static_cast<size_t>(ctx.size);
    std::vector<float> in(n * block), out(n * block, -1.0f);
    for (size_t j = 0; j < n; ++j) {
        for (size_t e = 0; e < block; ++e) {
            in[j * block + e] =
                static_cast<float>(ctx.rank * 100000 + static_cast<int>(j * 1000 + e));
        }
    }
    loom_coll_attr_t a = attr_naming("dor-relay");
    a.segments         = segments;
    loom_status_t st   = LOOM_SUCCESS;
    auto moved         = moved_by(ctx, [&] {
        st = loom_alltoall(ctx.comm, in.data(), out.data(), block, LOOM_FLOAT32, &a, nullptr);
    });
    ctx.check(st == LOOM_SUCCESS, std::string("dor-relay alltoall: ") + loom_status_string(st));
    long wrong = 0;
    for (size_t j = 0; j < n; ++j) {
        for (size_t e = 0; e < block; ++e) {
            float want = static_cast<float>(static_cast<int>(j) * 100000 + ctx.rank * 1000 +
                                            static_cast<int>(e));
            wrong += out[j * block + e] != want;
        }
    }
    ctx.check(wrong == 0, "dor-relay alltoall: " + std::to_string(wrong) + " wrong elements");
    // The routing's load on each link this rank drives: routes that step rank -> peer.
    uint64_t least = UINT64_MAX, most = 0;
    for (const loom_link_stat_t& l : moved) {
        uint64_t routes = 0;
        for (int src = 0; src < ctx.size; ++src) {
            for (int dst = 0; dst < ctx.size; ++dst) {
                auto path = routing::route(fabric, src, dst, ties);
                for (size_t h = 0; h + 1 < path.size(); ++h) {
                    routes += path[h] == ctx.rank && path[h + 1] == l.peer;
                }
            }
        }
        uint64_t want = routes * block * sizeof(float);
        least         = std::min(least, routes);
        most          = std::max(most, routes);
        ctx.check(l.sent_bytes == want, where(ctx, "dor-relay link load", l.peer) + ": " +
                                            std::to_string(l.sent_bytes) +
                                            " bytes, routing predicts " + std::to_string(routes) +
                                            " blocks = " + std::to_string(want) + " (" +
                                            std::string(routing::tie_rule_name(ties)) + ")");
        ctx.check(l.forwarded_msgs == 0, where(ctx, "dor-relay forwarded by the driver", l.peer));
    }
    std::printf(
        "rank %d: dor-relay all-to-all on %s (%s, P = %d): %llu..%llu blocks per outgoing link, "
        "as routed\n",
        ctx.rank, fabric.to_string().c_str(), std::string(routing::tie_rule_name(ties)).c_str(),
        segments, (unsigned long long)least, (unsigned long long)most);
}

void check_dims_phases(rank_context& ctx, const topology::shape& fabric, routing::tie_rule ties) {
    const size_t count = 65539;  // odd: uneven blocks in every phase
    const algorithms::call c{.coll       = algorithms::collective::allreduce,
                             .nranks     = ctx.size,
                             .count      = static_cast<int64_t>(count),
                             .dtype_size = sizeof(float),
                             .ties       = ties,
                             .topo       = fabric};
    const algorithms::algorithm* dims = algorithms::find(c.coll, "dims");
    auto sched                        = dims ? algorithms::generate_rank(*dims, c, ctx.rank)
                                             : result<schedule::rank_schedule>(invalid_argument("no dims"));
    ctx.check(sched.is_ok(), "dims schedule");
    if (!sched.is_ok()) {
        return;
    }
    // From the schedule: bytes per neighbour, and the phase order of the dimensions.
    std::vector<uint64_t> bytes_to(static_cast<size_t>(ctx.size), 0);
    std::vector<int> runs;  // dimensions of the sends in step order, repeats collapsed
    for (const schedule::step& s : sched->steps) {
        if (s.kind != schedule::step_kind::send) {
            continue;
        }
        int d = link_dim(fabric, ctx.rank, s.peer);
        ctx.check(d >= 0, where(ctx, "dims sends to a non-neighbour", s.peer));
        bytes_to[static_cast<size_t>(s.peer)] += static_cast<uint64_t>(s.src.count) * sizeof(float);
        if (runs.empty() || runs.back() != d) {
            runs.push_back(d);
        }
    }
    std::vector<int> phases;  // 0, 1, …, k−1, …, 1, 0 over the dimensions of size > 1
    for (int d = 0; d < fabric.ndims(); ++d) {
        if (fabric.dims()[static_cast<size_t>(d)] > 1) {
            phases.push_back(d);
        }
    }
    for (size_t i = phases.size() - 1; i-- > 0;) {
        phases.push_back(phases[i]);
    }
    std::string got;
    for (int d : runs) {
        got += std::to_string(d) + " ";
    }
    ctx.check(runs == phases, "dims phase order by dimension: " + got);
    // From the run.
    std::vector<float> in(count), out(count, -1.0f);
    for (size_t e = 0; e < count; ++e) {
        in[e] = static_cast<float>((ctx.rank + 1) * static_cast<int>(e % 7 + 1));
    }
    loom_coll_attr_t a = attr_naming("dims");
    loom_status_t st   = LOOM_SUCCESS;
    auto moved         = moved_by(ctx, [&] {
        st = loom_allreduce(ctx.comm, in.data(), out.data(), count, LOOM_FLOAT32, LOOM_SUM, &a,
                                    nullptr);
    });
    ctx.check(st == LOOM_SUCCESS, std::string("dims allreduce: ") + loom_status_string(st));
    long wrong   = 0;
    int rank_sum = ctx.size * (ctx.size + 1) / 2;
    for (size_t e = 0; e < count; ++e) {
        wrong += out[e] != static_cast<float>(rank_sum * static_cast<int>(e % 7 + 1));
    }
    ctx.check(wrong == 0, "dims allreduce: " + std::to_string(wrong) + " wrong elements");
    for (const loom_link_stat_t& l : moved) {
        uint64_t want = bytes_to[static_cast<size_t>(l.peer)];
        ctx.check(l.sent_bytes == want, where(ctx, "dims link bytes", l.peer) + ": " +
                                            std::to_string(l.sent_bytes) + ", schedule sends " +
                                            std::to_string(want));
        ctx.check(l.forwarded_msgs == 0, where(ctx, "dims forwarded by the driver", l.peer));
    }
}

}  // namespace loom::test::api
