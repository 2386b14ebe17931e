// SPDX-License-Identifier: Apache-2.0
// The in-network family ("inc": allreduce, reduce, broadcast through an aggregation node)
// against its closed form 2·α_switch + (1+1/P)·M/BW (runtime/algorithms/inc.cc), exactly
// (relative error < 1e-9 in time, n_alpha, n_alpha_switch and n_beta): every N and P of the
// issue, α_switch unset (the node's hops cost α) and set apart from α, on a star under both
// port models and on tori (inc is topology_aware: its hops never cross lattice links). An
// ALU latency at the node adds exactly once, however many segments pipeline.
#include "sim_test.hh"

using namespace loom;
using algorithms::port_model;
using schedule::collective;

namespace {

const std::vector<collective> inc_collectives = {collective::allreduce, collective::reduce,
                                                 collective::broadcast};
const std::vector<int> inc_ranks              = {1, 2, 5, 8, 64};
const std::vector<int> inc_segments           = {1, 2, 7, 16};
// α_switch unset, and a value that is no simple ratio of the generic α (1.3 µs).
const std::vector<double> alpha_switch_values = {-1, 0.37e-6};

// Counts a multiple of P, so the segments are equal as the form assumes.
int64_t count_for(int segments) {
    return 420 * static_cast<int64_t>(segments);
}

// "" when the simulation equals the closed form (+ the ALU once); else both sides.
std::string compare_inc(const algorithms::algorithm& a, const algorithms::call& c,
                        const sim::fabric& f) {
    auto r = sim::simulate(a, c, f);
    if (!r) {
        return test::describe_call(a, c) + ": " + r.error().to_string();
    }
    double m  = r->payload_bytes;
    auto cost = algorithms::predict(a, c, m, f.ports);
    double t  = cost.time_s(f.alpha_s, f.bw_bytes_per_s, m, f.alpha_switch_s) + f.alu_latency_s;
    // Unset, the node's hops are α hops: the simulator counts them in n_alpha.
    const bool apart      = f.alpha_switch_s >= 0;
    double n_alpha        = cost.n_alpha + (apart ? 0 : cost.n_alpha_switch);
    double n_alpha_switch = apart ? cost.n_alpha_switch : 0;
    const bool parts_agree =
        test::close_to(r->n_alpha, n_alpha) && test::close_to(r->n_alpha_switch, n_alpha_switch) &&
        test::close_to(r->n_beta, cost.n_beta) && test::close_to(r->other_s, f.alu_latency_s);
    if (test::close_to(r->time_s, t) && parts_agree) {
        return "";
    }
    return test::describe_call(a, c) + " " + test::ports_name(f) + " on " + c.topo.to_string() +
           ", α_switch " + test::fmt(f.alpha_switch_s) + ", ALU " + test::fmt(f.alu_latency_s) +
           ": simulated " + test::fmt(r->time_s) + " s (n_alpha " + test::fmt(r->n_alpha) +
           ", n_alpha_switch " + test::fmt(r->n_alpha_switch) + ", n_beta " + test::fmt(r->n_beta) +
           ", other " + test::fmt(r->other_s) + "), closed form " + test::fmt(t) + " s (n_alpha " +
           test::fmt(n_alpha) + ", n_alpha_switch " + test::fmt(n_alpha_switch) + ", n_beta " +
           test::fmt(cost.n_beta) + ")";
}

// Every collective, P and α_switch on `topo` (its own N) under `ports`, with `alu_s`.
void expect_on(const topology::shape& topo, port_model ports, double alu_s) {
    for (collective coll : inc_collectives) {
        const auto& a = test::find_algorithm(coll, "inc");
        for (int p : inc_segments) {
            // The root where it matters: the last rank, so that it is not rank 0 by chance.
            int root = coll == collective::allreduce ? 0 : topo.size() - 1;
            auto c   = test::make_call(coll, topo, count_for(p), root, p);
            for (double alpha_switch_s : alpha_switch_values) {
                sim::fabric f    = test::generic_fabric(ports);
                f.alpha_switch_s = alpha_switch_s;
                f.alu_latency_s  = alu_s;
                std::string err  = compare_inc(a, c, f);
                if (!err.empty()) {
                    LOOM_FAIL(err);
                }
            }
        }
    }
}

}  // namespace

static void inc_equals_closed_form_on_stars_both_port_models(void**) {
    for (int n : inc_ranks) {
        for (port_model ports : {port_model::per_edge, port_model::single_port}) {
            expect_on(topology::shape::star(n), ports, 0);
        }
    }
}

static void inc_equals_closed_form_on_tori(void**) {
    for (const char* text : {"torus:2x4", "torus:8x8", "torus:4x4x4", "ring:5", "mesh:2x1"}) {
        expect_on(topology::shape::parse(text).value(), port_model::per_edge, 0);
    }
}

// The ALU holds each slot's result; the pipeline hides it for every segment but the last.
static void inc_alu_latency_adds_exactly_once(void**) {
    for (int n : {1, 8, 64}) {
        expect_on(topology::shape::star(n), port_model::per_edge, 0.9e-6);
        expect_on(topology::shape::star(n), port_model::single_port, 0.9e-6);
    }
    expect_on(topology::shape::parse("torus:2x4").value(), port_model::per_edge, 0.9e-6);
}

// Set, α_switch is paid on the node's own links in every port model: the rank's switch port
// stays free for its software transfers. The report names them "r->agg" / "agg->r".
static void alpha_switch_hops_use_the_aggregation_links(void**) {
    const auto& a    = test::find_algorithm(collective::allreduce, "inc");
    auto c           = test::make_call(collective::allreduce, 4, 4 * 60);
    sim::fabric f    = test::generic_fabric(port_model::single_port);
    auto unset       = test::simulate_call(a, c, f);
    f.alpha_switch_s = 0.2e-6;
    auto set         = test::simulate_call(a, c, f);
    assert_true(!unset.top_links.empty() && !set.top_links.empty());
    assert_true(unset.top_links.front().name.find("switch") != std::string::npos);
    assert_true(set.top_links.front().name.find("agg") != std::string::npos);
    assert_true(test::close_to(unset.n_alpha, 2) && unset.n_alpha_switch == 0);
    assert_true(set.n_alpha == 0 && test::close_to(set.n_alpha_switch, 2));
    // α_switch = 0 is a value, not "unset": the hops are free and still counted.
    f.alpha_switch_s = 0;
    auto zero        = test::simulate_call(a, c, f);
    assert_true(test::close_to(zero.n_alpha_switch, 2));
    assert_true(test::close_to(zero.time_s, 2.0 * zero.payload_bytes / f.bw_bytes_per_s));
}

// check_fabric: α_switch must be finite; any negative value means unset.
static void alpha_switch_must_be_finite(void**) {
    const auto& a = test::find_algorithm(collective::allreduce, "inc");
    auto c        = test::make_call(collective::allreduce, 3, 30);
    for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
        sim::fabric f    = test::generic_fabric();
        f.alpha_switch_s = bad;
        auto r           = sim::simulate(a, c, f);
        assert_false(r.is_ok());
        assert_true(r.error().message().find("α_switch") != std::string::npos);
    }
    sim::fabric f    = test::generic_fabric();
    f.alpha_switch_s = -7;
    auto r           = test::simulate_call(a, c, f);
    f.alpha_switch_s = -1;
    assert_true(r.time_s == test::simulate_call(a, c, f).time_s);
}

LOOM_TEST_MAIN("fabric_sim_inc", cmocka_unit_test(inc_equals_closed_form_on_stars_both_port_models),
               cmocka_unit_test(inc_equals_closed_form_on_tori),
               cmocka_unit_test(inc_alu_latency_adds_exactly_once),
               cmocka_unit_test(alpha_switch_hops_use_the_aggregation_links),
               cmocka_unit_test(alpha_switch_must_be_finite))
