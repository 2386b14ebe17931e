// SPDX-License-Identifier: Apache-2.0
// The catalogue contract: every algorithm the foundation issue names is registered under
// its exact name, each entry documents itself, (primitive, name) is unique, and every
// algorithm rejects an invalid call with an invalid-argument status (not a crash).
#include <set>
#include <string>
#include <utility>

#include "algorithms/algorithm.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static void every_named_algorithm_is_registered(void**) {
    const std::pair<collective, const char*> required[] = {
        {collective::broadcast, "ring"},
        {collective::broadcast, "binomial"},
        {collective::broadcast, "dims"},
        {collective::reduce, "ring"},
        {collective::reduce, "binomial"},
        {collective::reduce, "dims"},
        {collective::allreduce, "ring"},
        {collective::allreduce, "dbt"},
        {collective::allreduce, "recursive-doubling"},
        {collective::allreduce, "rabenseifner"},
        {collective::allreduce, "reduce-broadcast"},
        {collective::allreduce, "dims"},
        {collective::allreduce, "hier-ring"},
        {collective::reduce_scatter, "ring"},
        {collective::reduce_scatter, "recursive-halving"},
        {collective::reduce_scatter, "pat"},
        {collective::reduce_scatter, "dims"},
        {collective::allgather, "ring"},
        {collective::allgather, "recursive-doubling"},
        {collective::allgather, "pat"},
        {collective::allgather, "dims"},
        {collective::alltoall, "pairwise"},
        {collective::alltoall, "ring-relay"},
        {collective::alltoall, "bruck"},
        {collective::alltoall, "dor-relay"},
        {collective::alltoall, "dims"},
        {collective::sendrecv, "direct"},
    };
    for (const auto& [coll, name] : required) {
        if (!algorithms::find(coll, name)) {
            LOOM_FAIL(std::string(schedule::collective_name(coll)) + " " + name +
                      " is not registered");
        }
    }
}

static void entries_are_documented_and_unique(void**) {
    std::set<std::pair<int, std::string>> seen;
    for (const auto* a : algorithms::catalogue()) {
        assert_false(a->name.empty());
        assert_false(a->summary.empty());
        assert_false(a->formula.empty());
        assert_false(a->constraints.empty());
        assert_non_null(a->applicable);
        assert_non_null(a->build);
        assert_non_null(a->predict);
        assert_true(seen.insert({static_cast<int>(a->primitive), std::string(a->name)}).second);
    }
}

static void invalid_calls_are_rejected_by_every_algorithm(void**) {
    for (const auto* a : algorithms::catalogue()) {
        const algorithms::call good{.coll   = a->primitive,
                                    .nranks = 4,
                                    .count  = 10,
                                    .topo   = *topology::shape::parse("torus:2x2")};
        // `good` with one field made invalid by `spoil`.
        auto expect_invalid = [&](auto spoil, const char* what) {
            auto c = good;
            spoil(c);
            auto st = algorithms::check_call(*a, c);
            if (st.code() != LOOM_ERR_INVALID_ARGUMENT) {
                LOOM_FAIL(std::string(a->name) + ": " + what + " gave " + st.to_string());
            }
        };
        expect_invalid([](auto& c) { c.nranks = 0; }, "N = 0");
        expect_invalid([](auto& c) { c.count = -1; }, "negative count");
        expect_invalid([](auto& c) { c.topo = topology::shape::star(5); }, "topology size != N");
        expect_invalid([](auto& c) { c.segments = 0; }, "0 segments");
        if (schedule::has_root(a->primitive)) {
            expect_invalid([](auto& c) { c.root = 4; }, "root out of range");
        }
        auto other =
            a->primitive == collective::allreduce ? collective::broadcast : collective::allreduce;
        expect_invalid([&](auto& c) { c.coll = other; }, "wrong primitive");
    }
}

static void names_for_lists_the_allowed_names(void**) {
    std::string names = algorithms::names_for(collective::allreduce);
    assert_true(names.find("ring") != std::string::npos);
    assert_null(algorithms::find(collective::allreduce, "no-such-algorithm"));
}

static algorithms::call lattice_call(const char* algo_topo, int64_t count) {
    auto topo = *topology::shape::parse(algo_topo);
    return {.coll = collective::allreduce, .nranks = topo.size(), .count = count, .topo = topo};
}

// On a switch predict() is the closed form; on a lattice an oblivious algorithm's logical
// hops are routed: the flat ring on torus:2x2x2 sends 3 -> 4 ((0,1,1) -> (1,0,0), 3 hops) in
// every one of its 14 rounds, so α counts 42; the ring on ring:8 is already physical.
static void predict_routes_oblivious_algorithms_on_lattices(void**) {
    const auto* ring = algorithms::find(collective::allreduce, "ring");
    const auto* dims = algorithms::find(collective::allreduce, "dims");
    auto per_edge    = algorithms::port_model::per_edge;

    auto star    = lattice_call("star:8", 8 * 1000);
    auto closed  = ring->predict(algorithms::query_for(star, 8000, per_edge));
    auto on_star = algorithms::predict(*ring, star, 8000, per_edge);
    assert_true(on_star.n_alpha == closed.n_alpha && on_star.n_beta == closed.n_beta);

    auto line    = lattice_call("ring:8", 8 * 1000);
    auto on_line = algorithms::predict(*ring, line, 8000, per_edge);
    assert_true(on_line.n_alpha == 14);
    assert_true(on_line.n_beta == 14.0 / 8);

    auto cube    = lattice_call("torus:2x2x2", 8 * 1000);
    auto on_cube = algorithms::predict(*ring, cube, 8000, per_edge);
    assert_true(on_cube.n_alpha == 42);
    assert_true(on_cube.n_beta >= 14.0 / 8);
    // dims talks to neighbours only: its own closed form is its lattice cost.
    auto d = algorithms::predict(*dims, cube, 8000, per_edge);
    assert_true(d.n_alpha == 6 && d.n_beta == 14.0 / 8);
}

// Above 1024 ranks: on torus:16x16x16 (4096 ranks) the log-depth schedules are still routed
// and counted (exact, at least their closed form: each logical hop is one or more physical
// ones); the flat ring's N² steps are not, and its closed form comes back marked a lower bound.
static void predict_routes_log_depth_schedules_at_4096_ranks(void**) {
    auto cube      = lattice_call("torus:16x16x16", 4096 * 4);
    auto per_edge  = algorithms::port_model::per_edge;
    const double m = 4096.0 * 4 * 4;
    for (const char* name : {"recursive-doubling", "rabenseifner", "dbt"}) {
        const auto* a = algorithms::find(collective::allreduce, name);
        auto closed   = a->predict(algorithms::query_for(cube, m, per_edge));
        auto routed   = algorithms::predict(*a, cube, m, per_edge);
        if (!routed.exact || routed.note.find("routed on torus:16x16x16") == std::string::npos ||
            routed.n_alpha <= closed.n_alpha || routed.n_beta < closed.n_beta * (1 - 1e-12)) {
            LOOM_FAIL(std::string(name) + " on 16x16x16: " + std::to_string(routed.n_alpha) +
                      " α, " + std::to_string(routed.n_beta) + " M/BW (" + routed.note + ")");
        }
    }
    const auto* ring = algorithms::find(collective::allreduce, "ring");
    auto closed      = ring->predict(algorithms::query_for(cube, m, per_edge));
    auto bound       = algorithms::predict(*ring, cube, m, per_edge);
    assert_false(bound.exact);
    assert_true(bound.n_alpha == closed.n_alpha && bound.n_beta == closed.n_beta);
    assert_true(bound.note.find("lower bound") != std::string::npos);
}

LOOM_TEST_MAIN("algorithms_catalogue", cmocka_unit_test(every_named_algorithm_is_registered),
               cmocka_unit_test(entries_are_documented_and_unique),
               cmocka_unit_test(invalid_calls_are_rejected_by_every_algorithm),
               cmocka_unit_test(names_for_lists_the_allowed_names),
               cmocka_unit_test(predict_routes_oblivious_algorithms_on_lattices),
               cmocka_unit_test(predict_routes_log_depth_schedules_at_4096_ranks))
