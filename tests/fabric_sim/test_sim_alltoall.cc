// SPDX-License-Identifier: Apache-2.0
// All-to-all on tori and meshes against fabric/routing's counts.
//  - dor-relay and the fabric-routed pairwise schedule: the simulated busiest link carries
//    exactly routing::count_all_to_all's busiest-link load L (chunks), and the time is at
//    least L chunks over BW (dor-relay: n_beta ≥ L/N; pairwise: n_beta ≥ min(L, N-1)/N,
//    its N-1 exchanges in sequence, since no queue need form on the busiest link).
//  - dor-relay forwards each segment as soon as it has arrived: never below α + L·c/BW, below
//    the former lockstep waves' D·α + W·c/BW wherever W > L, and exactly L·c/BW at α = 0 where
//    the busiest link never waits; predict() states D·α + L/N·M/BW (not exact), counted per
//    dimension up to 16x16x16.
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
            // Pairwise's N-1 exchanges per rank are in
            // sequence, and where L chunks of link time are short beside the α's (ring:8,
            // mesh:4x4, mesh:3x5, torus:8x4 here) no queue forms: links serve heads in
            // arrival order, so the critical path is one rank's N-1 chunks and α's, and only
            // the time is bound by L chunks (the link is busy that long).
            // dor-relay forwards each chunk as it arrives: α's of one path overlap the busiest
            // link's queue, so only its time is bound (the queue plus its last α).
            bool pairwise     = std::string(name) == "pairwise";
            double beta_floor = pairwise ? std::min<double>(load.busiest_link, n - 1) / n : 0;
            double time_floor = load.busiest_link * chunk / 7e9 + (pairwise ? 0 : 1.3e-6);
            if (r.top_links[0].bytes != load.busiest_link * chunk || r.n_beta < beta_floor - 1e-9 ||
                r.time_s < time_floor * (1 - 1e-9)) {
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

// The lockstep waves' time, D·α + W·c/BW: what dor-relay cost when every chunk moved one hop
// per round in bundles (routing::count_all_to_all's wave load W).
double lockstep_time(const routing::all_to_all_load& load, double chunk, const sim::fabric& f) {
    return load.rounds * f.alpha_s + static_cast<double>(load.wave) * chunk / f.bw_bytes_per_s;
}

// Asynchronous relay: never below the busiest link's queue and its last α (α + L·c/BW), and
// faster than the lockstep waves wherever those cost more than the busiest link (W > L),
// by at least a chunk time; predict() states D·α + L/N·M/BW, not exact.
static void dor_relay_async_between_link_bound_and_lockstep(void**) {
    const auto& a = test::find_algorithm(collective::alltoall, "dor-relay");
    int faster    = 0;
    for (const shaped& s : lattices) {
        for (int segments : {1, 4}) {
            auto c       = call_on(s, 1000);
            c.segments   = segments;
            auto f       = test::generic_fabric();
            auto r       = test::simulate_call(a, c, f);
            auto cost    = algorithms::predict(a, c, r.payload_bytes, f.ports);
            auto load    = routing::count_all_to_all(c.topo, s.ties);
            double chunk = 4000, n = c.nranks;
            double floor = f.alpha_s + load.busiest_link * chunk / f.bw_bytes_per_s;
            double waves = lockstep_time(load, chunk, f);
            bool stated  = !cost.exact && cost.n_alpha == load.rounds &&
                          test::close_to(cost.n_beta, load.busiest_link / n);
            bool in_range = r.time_s >= floor * (1 - 1e-9) && r.time_s <= waves * (1 + 1e-9);
            bool beats    = load.wave == load.busiest_link ||
                         r.time_s <= waves - chunk / f.bw_bytes_per_s * (1 - 1e-9);
            if (!stated || !in_range || !beats) {
                LOOM_FAIL("dor-relay on " + where(s) + " P=" + std::to_string(segments) +
                          ": simulated " + test::fmt(r.time_s) + " s; floor " + test::fmt(floor) +
                          ", lockstep " + test::fmt(waves) + "; stated n_alpha " +
                          test::fmt(cost.n_alpha) + ", n_beta " + test::fmt(cost.n_beta));
            }
            faster += load.wave > load.busiest_link;
        }
    }
    assert_true(faster >= 20);
}

// With α = 0 the run is the busiest link's queue alone: exactly L·c/BW where that link never
// waits for a chunk (the cases listed), and within 4/3·L·c/BW (always below the lockstep
// W·c/BW) on the others; docs/references.md#dor-relay-async has the table.
static void dor_relay_reaches_busiest_link_at_zero_alpha(void**) {
    const auto& a = test::find_algorithm(collective::alltoall, "dor-relay");
    struct reach {
        shaped s;
        int segments;
        bool exact;
    };
    const reach cases[] = {
        {{"ring:8", plus}, 1, true},         {{"ring:8", parity}, 1, true},
        {{"ring:7", plus}, 1, true},         {{"mesh:4x4", plus}, 1, true},
        {{"mesh:3x5", plus}, 1, true},       {{"mesh:3x5", parity}, 4, true},
        {{"torus:2x2", plus}, 1, true},      {{"torus:4x4", plus}, 1, true},
        {{"torus:4x4", plus}, 4, true},      {{"torus:8x4", plus}, 4, true},
        {{"torus:3x4x5", plus}, 1, true},    {{"torus:3x4x5", parity}, 4, true},
        {{"mesh:8x8", plus}, 4, true},       {{"torus:4x4", parity}, 1, false},
        {{"torus:8x8", plus}, 1, false},     {{"torus:8x8", parity}, 4, false},
        {{"torus:4x4x4", parity}, 1, false}, {{"torus:6x6", parity}, 1, false},
        {{"torus:5x5", parity}, 4, false},   {{"torus:3x3", plus}, 1, false},
    };
    for (const reach& e : cases) {
        auto c       = call_on(e.s, 1000);
        c.segments   = e.segments;
        auto f       = test::generic_fabric();
        f.alpha_s    = 0;
        auto r       = test::simulate_call(a, c, f);
        auto load    = routing::count_all_to_all(c.topo, e.s.ties);
        double queue = load.busiest_link * 4000 / f.bw_bytes_per_s;
        double waves = lockstep_time(load, 4000, f);
        bool ok      = e.exact ? test::close_to(r.time_s, queue)
                               : r.time_s > queue * (1 + 1e-9) && r.time_s <= 4.0 / 3 * queue &&
                                r.time_s < waves;
        if (!ok) {
            LOOM_FAIL("dor-relay on " + where(e.s) + " P=" + std::to_string(e.segments) +
                      " at α = 0: " + test::fmt(r.time_s / (4000 / f.bw_bytes_per_s)) +
                      " chunk times, busiest link " + std::to_string(load.busiest_link) +
                      ", lockstep " + std::to_string(load.wave) +
                      (e.exact ? " (expected the busiest link)" : ""));
        }
    }
}

// 16x16x16 (4096 ranks): predict() counts L per dimension (routing::count_all_to_all, no
// schedule is generated or simulated): toward_plus 36 chunks per line-link of a 16-line times
// 256 lines' worth = 9216, source_parity d/8 · N = 8192 (M/BW·2, Lu-TM's d_max/8), diameter 24.
static void dor_relay_predicts_16x16x16(void**) {
    const auto& a = test::find_algorithm(collective::alltoall, "dor-relay");
    for (auto [ties, chunks] : {std::pair{plus, int64_t{9216}}, std::pair{parity, int64_t{8192}}}) {
        auto c    = call_on({"torus:16x16x16", ties}, 1);
        auto cost = algorithms::predict(a, c, 4096.0 * 4, algorithms::port_model::per_edge);
        if (cost.n_alpha != 24 || !test::close_to(cost.n_beta, chunks / 4096.0) || cost.exact) {
            LOOM_FAIL(std::string("16x16x16 ") + routing::tie_rule_name(ties).data() +
                      ": stated n_alpha " + test::fmt(cost.n_alpha) + ", n_beta " +
                      test::fmt(cost.n_beta) + " (" + cost.note + ")");
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
               cmocka_unit_test(dor_relay_async_between_link_bound_and_lockstep),
               cmocka_unit_test(dor_relay_reaches_busiest_link_at_zero_alpha),
               cmocka_unit_test(dor_relay_predicts_16x16x16),
               cmocka_unit_test(d_max_over_8_holds_where_d_max_is_a_multiple_of_4))
