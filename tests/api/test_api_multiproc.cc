// SPDX-License-Identifier: Apache-2.0
// The C API across real processes (fork; shm by default, the transport in argv[1]): every
// collective × every algorithm that applies × N ∈ {1, 2, 3, 4, 5, 8} × counts {0, 1, 7, N,
// 65539, 4194305}, with every dtype and every op among the reductions (all pairs for small
// counts, one rotating pair at the large ones), roots 0, N-1 and N/2, in place against out of
// place, checked against reference.hh; then point-to-point, five collectives in flight at once,
// 1000 back-to-back all-reduces and a split. The lattice-only algorithms (dims, dor-relay) run on
// torus:2x2 and torus:2x4. One launch per N: many cases per launch.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hh"
#include "api_test_util.hh"
#include "base/clock.hh"
#include "fabric_checks.hh"
#include "proc_launch.hh"
#include "sweep_cases.hh"
#include "test_main.hh"

namespace {

using namespace loom::test::api;
using loom::comm::call_kind;
using loom::test::sleep_s;

const char* transport = "shm";

struct dtype_op {
    loom_dtype_t dtype;
    loom_op_t op;
};

// Every dtype and every op appear; floats meet each op at least once.
constexpr dtype_op pairs[] = {
    {LOOM_INT32, LOOM_SUM},    {LOOM_UINT8, LOOM_MAX},    {LOOM_INT64, LOOM_PROD},
    {LOOM_INT8, LOOM_MIN},     {LOOM_FLOAT32, LOOM_SUM},  {LOOM_FLOAT64, LOOM_AVG},
    {LOOM_FLOAT16, LOOM_SUM},  {LOOM_BFLOAT16, LOOM_MAX}, {LOOM_UINT32, LOOM_AVG},
    {LOOM_UINT64, LOOM_SUM},   {LOOM_FLOAT32, LOOM_PROD}, {LOOM_INT32, LOOM_AVG},
    {LOOM_BFLOAT16, LOOM_SUM}, {LOOM_FLOAT16, LOOM_MIN},  {LOOM_INT8, LOOM_SUM},
};
constexpr int npairs = sizeof pairs / sizeof pairs[0];

struct sweep_args {
    const char* topology = nullptr;  // NULL: star:N, every algorithm
    bool lattice_only    = false;    // run only the topology-aware algorithms
    bool extras          = true;     // p2p, concurrency, back-to-back, split
    bool large           = true;     // the 4194305-element count (false: --from-env --light)
};

// The catalogue's algorithms for `kind` that apply to (N, count) on `topo`.
std::vector<std::string> algorithms_for(call_kind kind, int n, size_t count,
                                        const loom::topology::shape& topo, bool lattice_only) {
    std::vector<std::string> out;
    for (const loom::algorithms::algorithm* a : loom::algorithms::catalogue()) {
        // inc needs an aggregation node; without one it is the default algorithm again
        // (its fallback), which the sweep already runs. api_inc runs it through real nodes.
        // flat (node_local) needs the node's flat segment, shm only: api_flat runs it.
        if (a->primitive != loom::comm::primitive_of(kind) ||
            (lattice_only && !a->topology_aware) || a->name == "inc" || a->node_local) {
            continue;
        }
        if (loom::algorithms::check_call(*a, {.coll   = a->primitive,
                                              .nranks = n,
                                              .count  = static_cast<int64_t>(count),
                                              .topo   = topo})) {
            out.emplace_back(a->name);
        }
    }
    return out;
}

// The large count runs at every N in the normal build; under the sanitizers (several
// times slower, and looking for memory errors, which do not depend on N) up to N = 3.
#ifdef LOOM_TEST_SANITIZED
constexpr int max_ranks_at_large_count = 3;
#else
constexpr int max_ranks_at_large_count = 8;
#endif

void sweep_primitive(rank_context& ctx, call_kind kind, const sweep_args& args,
                     const loom::topology::shape& topo, int* rotation) {
    int n = ctx.size;
    // 4194305 (16 MiB of float32, an odd count past every eager and rendezvous limit) with
    // one rotating (dtype, op) pair; alltoall takes it as the whole send buffer, so each
    // rank sends ceil(4194305 / N) elements to each peer (memory stays bounded at N = 8).
    const size_t counts[] = {0, 1, 7, static_cast<size_t>(n), 65539, 4194305};
    const int roots[]     = {0, n - 1, n / 2};
    bool reduces          = loom::comm::kind_reduces(kind);
    for (size_t count : counts) {
        if (count == 4194305 && (n > max_ranks_at_large_count || !args.large)) {
            continue;
        }
        if (count == 4194305 && kind == call_kind::alltoall) {
            count = (count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
        }
        for (const std::string& algo : algorithms_for(kind, n, count, topo, args.lattice_only)) {
            bool big  = count > 1000;
            int npair = reduces && !big ? npairs : 1;
            int nroot =
                (kind == call_kind::broadcast || kind == call_kind::reduce) && count == 7 ? 3 : 1;
            for (int p = 0; p < npair; ++p) {
                for (int r = 0; r < nroot; ++r) {
                    int which = npair == 1 ? (*rotation)++ % npairs : p;
                    run_case(ctx, {.kind      = kind,
                                   .algorithm = algo,
                                   .count     = count,
                                   .dtype     = pairs[which].dtype,
                                   .op        = pairs[which].op,
                                   .root      = nroot == 1 ? roots[*rotation % 3] : roots[r],
                                   .seed = 1000 + static_cast<uint64_t>(*rotation) * 7919 + count});
                }
            }
        }
    }
}

// Segments and channels through the attribute, at a count that makes them matter.
void sweep_attributes(rank_context& ctx) {
    struct variant {
        call_kind kind;
        const char* algorithm;
        int segments, channels;
    };
    const variant variants[] = {
        {call_kind::broadcast, "binomial", 4, 0}, {call_kind::reduce, "ring", 3, 0},
        {call_kind::allreduce, "ring", 2, 2},     {call_kind::allreduce, "dbt", 4, 0},
        {call_kind::broadcast, "ring", 3, 2},
    };
    for (const variant& v : variants) {
        for (size_t count : {size_t{7}, size_t{65539}}) {
            run_case(ctx, {.kind      = v.kind,
                           .algorithm = v.algorithm,
                           .count     = count,
                           .dtype     = LOOM_FLOAT32,
                           .root      = ctx.size - 1,
                           .segments  = v.segments,
                           .channels  = v.channels,
                           .seed      = 77 + count});
        }
    }
}

void sweep_workload(rank_context& ctx, const void* raw) {
    const auto& args = *static_cast<const sweep_args*>(raw);
    auto topo        = args.topology ? *loom::topology::shape::parse(args.topology)
                                     : loom::topology::shape::star(ctx.size);
    int rotation     = 0;
    for (call_kind kind : data_kinds) {
        sweep_primitive(ctx, kind, args, topo, &rotation);
    }
    if (!args.extras) {
        return;
    }
    sweep_attributes(ctx);
    run_p2p(ctx, 4242);
    run_concurrent(ctx, 99);
    run_back_to_back(ctx, 1000);
    run_split(ctx);
}

void expect_launch(int nranks, const char* topology, const sweep_args& args,
                   loom_progress_mode_t progress = LOOM_PROGRESS_DEFAULT) {
    // N = 8 with 16 MiB vectors on 2 loaded cores takes ~50 s.
    launch_options o{.nranks    = nranks,
                     .transport = transport,
                     .topology  = topology,
                     .timeout_s = 200,
                     .progress  = progress};
    expect_launch_ok(o, sweep_workload, &args, "sweep");
}

template <int N>
void sweep_star(void**) {
    expect_launch(N, nullptr, sweep_args{});
}

// The same sweep with a progress thread per communicator (LOOM_PROGRESS=thread).
void sweep_progress_thread(void**) {
    expect_launch(5, nullptr, sweep_args{}, LOOM_PROGRESS_THREAD);
}

void sweep_lattices(void**) {
    for (auto [n, topology] :
         {std::pair{4, "torus:2x2"}, std::pair{8, "torus:2x4"}, std::pair{5, "ring:5"}}) {
        expect_launch(n, topology, {.topology = topology, .lattice_only = true, .extras = false});
    }
}

// Rank 0 all-reduces 4 elements while the others all-reduce 5: every rank's call fails with
// LOOM_ERR_MISMATCH within the timeout, and the communicator still runs the next call.
void mismatch_workload(rank_context& ctx, const void*) {
    std::vector<int32_t> in(5, 1), out(5, -7);
    size_t count     = ctx.rank == 0 ? 4 : 5;
    loom_status_t st = loom_allreduce(ctx.comm, in.data(), out.data(), count, LOOM_INT32, LOOM_SUM,
                                      nullptr, nullptr);
    ctx.check(st == LOOM_ERR_MISMATCH, std::string("mismatched allreduce returned ") +
                                           loom_status_string(st) + ": " +
                                           loom_last_error_message());
    loom_error_info_t info = last_error();
    ctx.check(std::strcmp(info.collective, "allreduce") == 0,
              std::string("last error names '") + info.collective + "'");
    int64_t one = 1, sum = 0;
    st = loom_allreduce(ctx.comm, &one, &sum, 1, LOOM_INT64, LOOM_SUM, nullptr, nullptr);
    ctx.check(st == LOOM_SUCCESS && sum == ctx.size,
              std::string("allreduce after a mismatch: ") + loom_last_error_message());
}

// Three ranks whose calls end within 10 s.
void launch_three(workload fn, const char* name) {
    expect_launch_ok({.nranks = 3, .transport = transport, .call_timeout_s = 10}, fn, nullptr,
                     name);
}

void mismatch_fails_every_rank(void**) {
    launch_three(mismatch_workload, "mismatch");
}

// Rank 2 never joins: the others' calls end with LOOM_ERR_TIMEOUT at the call's deadline
// (attribute) or loom_wait_timeout's, with the last error naming rank, peer and step; then
// loom_comm_abort returns promptly with a call in flight, which fails with the abort.
void deadline_workload(rank_context& ctx, const void*) {
    if (ctx.rank == 2) {
        sleep_s(3.0);  // alive, silent: the others must time out, not see a dead peer
        return;
    }
    std::vector<int32_t> in(16, 1), out(16, 0);
    loom_coll_attr_t attr = attr_naming(nullptr);
    attr.timeout_s        = 0.5;
    double t0             = loom::now_s();
    loom_status_t st =
        loom_allreduce(ctx.comm, in.data(), out.data(), 16, LOOM_INT32, LOOM_SUM, &attr, nullptr);
    double took            = loom::now_s() - t0;
    loom_error_info_t info = last_error();
    ctx.check(st == LOOM_ERR_TIMEOUT && took >= 0.45 && took < 2.5,
              std::string("attribute deadline: ") + loom_status_string(st) + " after " +
                  std::to_string(took) + " s: " + loom_last_error_message());
    // A rank that timed out itself names its step; one told by a peer that timed out first
    // has no step of its own, and says who reported it.
    bool step_or_reporter = info.step >= 0 || contains(info.message, "reported");
    ctx.check(info.rank == ctx.rank && info.peer >= 0 && info.peer < 3 && step_or_reporter &&
                  std::strcmp(info.collective, "allreduce") == 0,
              std::string("timeout detail: ") + info.message);
    loom_request_t req = nullptr;
    st = loom_broadcast(ctx.comm, in.data(), out.data(), 16, LOOM_INT32, 2, nullptr, &req);
    ctx.check(st == LOOM_SUCCESS, "broadcast start");
    t0   = loom::now_s();
    st   = loom_wait_timeout(req, 0.3);
    took = loom::now_s() - t0;
    ctx.check(st == LOOM_ERR_TIMEOUT && took < 2.0,
              std::string("loom_wait_timeout: ") + loom_status_string(st));
    loom_request_free(req);
    st = loom_allgather(ctx.comm, in.data(), out.data(), 3, LOOM_INT32, nullptr, &req);
    ctx.check(st == LOOM_SUCCESS, "allgather start");
    t0 = loom::now_s();
    loom_comm_abort(ctx.comm, "deadline test");
    st   = loom_wait(req);
    took = loom::now_s() - t0;
    ctx.check(st == LOOM_ERR_PEER_FAILURE && took < 0.5 &&
                  contains(loom_last_error_message(), "deadline test"),
              std::string("abort with a call in flight: ") + loom_status_string(st) + " after " +
                  std::to_string(took) + " s: " + loom_last_error_message());
    loom_request_free(req);
}

void deadlines_and_abort_end_calls(void**) {
    launch_three(deadline_workload, "deadlines");
}

// Under a launcher (loomrun, mpirun): one rank, everything from the environment, the whole
// sweep. Over a fabric (LOOM_FABRIC, loomrun --fabric) the communicator's topology is the
// fabric, so the sweep includes the lattice algorithms, and --fabric-checks adds the
// link-counter checks of fabric_checks.hh. --light leaves out the 4194305-element count.
struct from_env_args {
    bool light = false, fabric_checks = false;
};

void from_env_workload(rank_context& ctx, const void* raw) {
    const auto& opts = *static_cast<const from_env_args*>(raw);
    sweep_args args;
    args.large              = !opts.light;
    const char* fabric_text = std::getenv("LOOM_FABRIC");
    const char* topo_text   = std::getenv("LOOM_TOPOLOGY");
    if (fabric_text && *fabric_text && !(topo_text && *topo_text)) {
        args.topology = fabric_text;
    }
    sweep_workload(ctx, &args);
    if (!opts.fabric_checks) {
        return;
    }
    auto fabric                  = loom::topology::shape::parse(fabric_text ? fabric_text : "");
    const char* ties_text        = std::getenv("LOOM_ROUTE_TIES");
    loom::routing::tie_rule ties = loom::routing::tie_rule::toward_plus;
    ctx.check(fabric.is_ok() && (!ties_text || loom::routing::parse_tie_rule(ties_text, &ties)),
              "--fabric-checks needs LOOM_FABRIC (and a valid LOOM_ROUTE_TIES)");
    if (fabric.is_ok()) {
        check_links_are_neighbours(ctx, *fabric);
        check_dor_relay_link_loads(ctx, *fabric, ties);
        check_dor_relay_link_loads(ctx, *fabric, ties, 3);
        check_dims_phases(ctx, *fabric, ties);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--from-env") == 0) {
        from_env_args args;
        for (int i = 2; i < argc; ++i) {
            args.light         = args.light || std::strcmp(argv[i], "--light") == 0;
            args.fabric_checks = args.fabric_checks || std::strcmp(argv[i], "--fabric-checks") == 0;
        }
        return run_from_environment(from_env_workload, &args);
    }
    if (argc > 1) {
        transport = argv[1];
    }
    const CMUnitTest tests[] = {
        cmocka_unit_test(sweep_star<1>),
        cmocka_unit_test(sweep_star<2>),
        cmocka_unit_test(sweep_star<3>),
        cmocka_unit_test(sweep_star<4>),
        cmocka_unit_test(sweep_star<5>),
        cmocka_unit_test(sweep_star<8>),
        cmocka_unit_test(sweep_progress_thread),
        cmocka_unit_test(sweep_lattices),
        cmocka_unit_test(mismatch_fails_every_rank),
        cmocka_unit_test(deadlines_and_abort_end_calls),
    };
    return LOOM_RUN_TESTS("api_multiproc", tests);
}
