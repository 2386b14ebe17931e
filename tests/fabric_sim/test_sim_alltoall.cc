// SPDX-License-Identifier: Apache-2.0
// All-to-all on tori and meshes against fabric/routing's counts.
//  - dor-relay and the fabric-routed pairwise schedule: the simulated busiest link carries
//    exactly routing::count_all_to_all's busiest-link load L (chunks), and the time is at
//    least L chunks over BW (dor-relay: n_beta ≥ L/N; pairwise: n_beta ≥ min(L, N-1)/N,
//    its N-1 exchanges in sequence, since no queue need form on the busiest link).
//  - dor-relay runs its lockstep waves: under toward_plus on tori the simulated n_beta is
//    predict()'s W/N; under source_parity the waves overlap and it lands between L/N and W/N.
//  - Lu-TM §3.6's d_max/8·M/BW: the busiest link carries d_max/8·M where d_max is a multiple
//    of 4 under source_parity (4x4, 4x4x4, 8x8, 8x4); elsewhere the simulated load is the
//    routing's (docs/references.md#dor-ties, docs/references.md#a2a-bound-range): 2x2 and 2x2x2 M/2
//    (one link per dim-line), 3x3 M/3, 5x5 3/5·M, 6x6 5/6·M, toward_plus 4x4 3/4·M; mesh d_max/4
//    for even d_max (4x4: M).
#include "sim_test.hh"

using namespace loom;
using schedule::collective;

namespace {

struct shaped {
    const char* topo;
    routing::tie_rule ties;
};

constexpr auto plus   = routing::tie_rule::toward_plus;
constexpr auto parity = routing::tie_rule::source_parity;

const shaped lattices[] = {
    {"torus:4x4", plus},   {"torus:4x4", parity},   {"torus:4x4x4", plus}, {"torus:4x4x4", parity},
    {"torus:8x8", plus},   {"torus:8x8", parity},   {"torus:2x2", plus},   {"torus:2x2x2", plus},
    {"torus:3x3", plus},   {"torus:5x5", parity},   {"torus:6x6", plus},   {"torus:6x6", parity},
    {"torus:8x4", parity}, {"mesh:4x4", plus},      {"mesh:3x5", plus},    {"ring:8", plus},
    {"ring:7", plus},      {"torus:3x4x5", parity},
};

algorithms::call call_on(const shaped& s, int64_t count) {
    auto topo = topology::shape::parse(s.topo).value();
    auto c    = test::make_call(collective::alltoall, topo, count);
    c.ties    = s.ties;
    return c;
}

std::string where(const shaped& s) {
    return std::string(s.topo) + " " + std::string(routing::tie_rule_name(s.ties));
}

}  // namespace

static void busiest_link_carries_the_routing_load(void**) {
    const int64_t count = 1000, chunk = count * 4;
    for (const char* name : {"dor-relay", "pairwise"}) {
        const auto& a = test::find_algorithm(collective::alltoall, name);
        for (const shaped& s : lattices) {
            auto c    = call_on(s, count);
            auto load = routing::count_all_to_all(c.topo, s.ties);
            auto r    = test::simulate_call(a, c, test::generic_fabric());
            double n  = c.nranks;
            // The critical path carries the busiest link's L chunks when it runs through that
            // link's queue (dor-relay's waves). Pairwise's N-1 exchanges per rank are in
            // sequence, and where L chunks of link time are short beside the α's (ring:8,
            // mesh:4x4, mesh:3x5, torus:8x4 here) no queue forms: links serve heads in
            // arrival order, so the critical path is one rank's N-1 chunks and α's, and only
            // the time is bound by L chunks (the link is busy that long).
            double beta_floor = std::string(name) == "pairwise"
                                    ? std::min<double>(load.busiest_link, n - 1) / n
                                    : load.busiest_link / n;
            if (r.top_links[0].bytes != load.busiest_link * chunk || r.n_beta < beta_floor - 1e-9 ||
                r.time_s < load.busiest_link * chunk / 7e9) {
                LOOM_FAIL(std::string(name) + " on " + where(s) + ": busiest link " +
                          std::to_string(r.top_links[0].bytes) + " B, routing says " +
                          std::to_string(load.busiest_link) + " chunks of " +
                          std::to_string(chunk) + " B; n_beta " + test::fmt(r.n_beta));
            }
            // The critical path walks back through link waits (each to what held the blocker
            // back before it took that link) to a step ready at the start.
            if (r.chain.empty() || r.chain.front().why != sim::gate::none ||
                static_cast<int64_t>(r.chain.size()) > r.steps) {
                LOOM_FAIL(std::string(name) + " on " + where(s) + ": critical path of " +
                          std::to_string(r.chain.size()) + " steps does not reach the start");
            }
        }
    }
}

static void dor_relay_time_between_link_bound_and_lockstep_waves(void**) {
    const auto& a = test::find_algorithm(collective::alltoall, "dor-relay");
    for (const shaped& s : lattices) {
        auto c    = call_on(s, 1000);
        auto f    = test::generic_fabric();
        auto r    = test::simulate_call(a, c, f);
        auto cost = algorithms::predict(a, c, r.payload_bytes, f.ports);
        auto load = routing::count_all_to_all(c.topo, s.ties);
        double n  = c.nranks;
        double lo = load.busiest_link / n, hi = static_cast<double>(load.wave) / n;
        // Waves that overlap can also leave the longest route off the critical path.
        bool in_range =
            r.n_beta >= lo - 1e-9 && r.n_beta <= hi + 1e-9 && r.n_alpha <= load.rounds + 1e-9;
        bool waves =
            !(c.topo.wraps() && s.ties == plus) ||
            (test::close_to(r.n_beta, cost.n_beta) && test::close_to(r.n_alpha, cost.n_alpha));
        if (!in_range || !waves) {
            LOOM_FAIL("dor-relay on " + where(s) + ": simulated n_alpha " + test::fmt(r.n_alpha) +
                      ", n_beta " + test::fmt(r.n_beta) + "; L/N " + test::fmt(lo) + ", W/N " +
                      test::fmt(hi) + ", predict " + test::fmt(cost.n_beta));
        }
    }
}

static void d_max_over_8_holds_where_d_max_is_a_multiple_of_4(void**) {
    struct expected {
        shaped s;
        double fraction_of_m;  // busiest link's bytes / M
    };
    const expected cases[] = {
        {{"torus:4x4", parity}, 4.0 / 8}, {{"torus:4x4x4", parity}, 4.0 / 8},
        {{"torus:8x8", parity}, 8.0 / 8}, {{"torus:8x4", parity}, 8.0 / 8},
        {{"torus:2x2", plus}, 1.0 / 2},   {{"torus:2x2x2", plus}, 1.0 / 2},
        {{"torus:3x3", plus}, 1.0 / 3},   {{"torus:5x5", parity}, 3.0 / 5},
        {{"torus:6x6", parity}, 5.0 / 6}, {{"torus:4x4", plus}, 3.0 / 4},
        {{"mesh:4x4", plus}, 4.0 / 4},
    };
    const auto& a = test::find_algorithm(collective::alltoall, "dor-relay");
    for (const expected& e : cases) {
        auto c        = call_on(e.s, 1000);
        auto r        = test::simulate_call(a, c, test::generic_fabric());
        double d_max  = c.topo.max_dim();
        double text   = d_max / (c.topo.wraps() ? 8 : 4);
        bool text_too = e.fraction_of_m == text;
        double got    = r.top_links[0].bytes / r.payload_bytes;
        if (!test::close_to(got, e.fraction_of_m)) {
            LOOM_FAIL("dor-relay on " + where(e.s) + ": busiest link carries " + test::fmt(got) +
                      "·M, expected " + test::fmt(e.fraction_of_m) + "·M" +
                      (text_too ? " (= d_max/8)" : " (Lu-TM's approximation does not hold)"));
        }
    }
}

LOOM_TEST_MAIN("fabric_sim_alltoall", cmocka_unit_test(busiest_link_carries_the_routing_load),
               cmocka_unit_test(dor_relay_time_between_link_bound_and_lockstep_waves),
               cmocka_unit_test(d_max_over_8_holds_where_d_max_is_a_multiple_of_4))
