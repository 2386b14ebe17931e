// SPDX-License-Identifier: Apache-2.0
// The engine over fwd:shm on torus:2x2x2 (8 forked ranks) with a progress thread per rank
// (progress_mode::thread, what LOOM_PROGRESS=thread selects): every all-reduce algorithm of
// the catalogue, at sizes that take one chunk and several, through ranks that forward for
// each other while their own calls wait. The thread keeps polling after a rank's own call
// finished, which the routes through that rank need.
#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/algorithm.hh"
#include "driver_test_util.hh"
#include "drivers/forward/forward.hh"
#include "engine/engine.hh"
#include "test_main.hh"

using namespace loom;
using loom::test::file_store;

namespace {

int32_t input_value(int rank, int64_t i) {
    return static_cast<int32_t>((rank * 7 + i * 3) % 11) - 5;
}

int engine_rank(int rank, int n, const std::string& job, const std::string& dir) {
    file_store store(dir);
    drivers::endpoint_config cfg;
    cfg.rank = rank, cfg.size = n, cfg.job = job, cfg.store = &store, cfg.timeout_s = 30;
    cfg.fabric = "torus:2x2x2";
    auto ep    = drivers::open("fwd:shm", cfg);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    RANK_CHECK(rank, (*ep)->connect().is_ok(), "connect");
    engine::engine_config ec;
    ec.rank = rank, ec.size = n, ec.timeout_s = 30;
    ec.progress = engine::progress_mode::thread;
    auto eng    = engine::engine::create(ec, **ep);
    RANK_CHECK(rank, eng.is_ok(), "engine");
    auto shape   = *topology::shape::parse("torus:2x2x2");
    uint32_t seq = 1;
    int calls    = 0;
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        // inc's steps go to an aggregation node through the communicator's offload, which
        // an engine alone has not got (api_inc runs it through loom-switch).
        if (a->primitive != schedule::collective::allreduce || a->name == "inc" || a->node_local) {
            continue;
        }
        for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{65539}}) {
            algorithms::call c;
            c.coll = a->primitive, c.nranks = n, c.count = count;
            c.topo  = a->topology_aware ? shape : topology::shape::star(n);
            auto rs = algorithms::generate_rank(*a, c, rank);
            if (!rs) {
                continue;  // not applicable to this call
            }
            schedule::schedule_info info;
            info.coll = c.coll, info.nranks = n, info.count = count;
            info.algorithm = std::string(a->name), info.dtype_size = 4;
            auto p = engine::compile(info, *rs, LOOM_INT32, 0x5157 + uint64_t(count));
            RANK_CHECK(rank, p.is_ok(), "%s", p.error().to_string().c_str());
            std::vector<int32_t> in(static_cast<size_t>(count));
            std::vector<int32_t> out(static_cast<size_t>(count), -77777);
            for (int64_t i = 0; i < count; ++i) {
                in[size_t(i)] = input_value(rank, i);
            }
            auto r =
                (*eng)->start(*p, {in.data(), out.data(), LOOM_INT32, LOOM_SUM}, seq++, false, 60);
            RANK_CHECK(rank, r.is_ok(), "%s", r.error().to_string().c_str());
            loom_status_t st = (*eng)->wait(*r, -1);
            RANK_CHECK(rank, st == LOOM_SUCCESS, "%s count %lld: %s", std::string(a->name).c_str(),
                       (long long)count, (*eng)->failure_of(*r).message.c_str());
            (*eng)->release(*r);
            for (int64_t i = 0; i < count; ++i) {
                int32_t want = 0;
                for (int q = 0; q < n; ++q) {
                    want += input_value(q, i);
                }
                RANK_CHECK(rank, out[size_t(i)] == want, "%s count %lld: out[%lld] = %d, want %d",
                           std::string(a->name).c_str(), (long long)count, (long long)i,
                           out[size_t(i)], want);
            }
            ++calls;
        }
    }
    RANK_CHECK(rank, calls >= 3, "only %d calls ran", calls);
    // The progress thread forwards for the others until every rank is through.
    RANK_CHECK(rank, store.set("done" + std::to_string(rank), "1").is_ok(), "set");
    std::vector<std::string> keys;
    for (int q = 0; q < n; ++q) {
        keys.push_back("done" + std::to_string(q));
    }
    RANK_CHECK(rank, store.wait(keys, 60).is_ok(), "barrier");
    eng->reset();  // joins the progress thread: the counters are still from here on
    uint64_t forwarded = 0;
    for (const auto& s : drivers::link_stats(**ep)) {
        forwarded += s.forwarded;
    }
    std::printf("# rank %d: %d all-reduces, %llu chunks forwarded\n", rank, calls,
                (unsigned long long)forwarded);
    (*ep)->close();
    return 0;
}

void allreduce_over_fwd_shm_torus_2x2x2(void**) {
    EXPECT_PASSED(test::run_job(
        "fwdeng", 8, 240, [](int r, auto& job, auto& dir) { return engine_rank(r, 8, job, dir); }));
}

}  // namespace

LOOM_TEST_MAIN("drivers_forward_engine", cmocka_unit_test(allreduce_over_fwd_shm_torus_2x2x2))
