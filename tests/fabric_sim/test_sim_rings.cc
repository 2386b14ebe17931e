// SPDX-License-Identifier: Apache-2.0
// The simulator against the stated forms of the ring variants: the bidirectional ring on
// stars (per-edge exact; single-port the lockstep count, which an asynchronous port meets or
// beats by overlapping one direction's bytes with the other's α), on rings (routed), the
// one-way per-dimension broadcast and reduce, and per-dimension Rabenseifner on tori and
// meshes. Counts are multiples of 2N (and of P) so blocks and segments are equal.
#include "sim_test.hh"
#include "test_case.hh"

using namespace loom;
using algorithms::port_model;
using schedule::collective;

namespace {

const collective ring_primitives[] = {collective::allreduce, collective::reduce_scatter,
                                      collective::allgather};

}  // namespace

static void bidir_ring_per_edge_equals_closed_form_on_stars(void**) {
    for (auto coll : ring_primitives) {
        const auto& a = test::find_algorithm(coll, "bidir-ring");
        for (int n : test::standard_ranks()) {
            test::expect_closed_form(a, test::make_call(coll, n, int64_t{n} * 2 * 30),
                                     test::generic_fabric(port_model::per_edge));
        }
    }
}

// Single-port: never below the per-edge form (the port is shared), never above the lockstep
// form by more than one half-block's time.
static void bidir_ring_single_port_within_lockstep_form(void**) {
    for (auto coll : ring_primitives) {
        const auto& a = test::find_algorithm(coll, "bidir-ring");
        for (int n : test::standard_ranks()) {
            auto c      = test::make_call(coll, n, int64_t{n} * 2 * 3000);
            auto f      = test::generic_fabric(port_model::single_port);
            auto r      = test::simulate_call(a, c, f);
            auto stated = algorithms::predict(a, c, r.payload_bytes, f.ports);
            auto edge   = algorithms::predict(a, c, r.payload_bytes, port_model::per_edge);
            double hi   = stated.time_s(f.alpha_s, f.bw_bytes_per_s, r.payload_bytes);
            double lo   = edge.time_s(f.alpha_s, f.bw_bytes_per_s, r.payload_bytes);
            // The two directions queue on one port in whichever order their heads arrive: at
            // small N one half-block can wait behind the other once more than lockstep says.
            double slack = r.payload_bytes / (2.0 * n) / f.bw_bytes_per_s;
            if (r.time_s > (hi + slack) * (1 + 1e-9) || r.time_s < lo * (1 - 1e-9)) {
                LOOM_FAIL(test::describe_call(a, c) + ": simulated " + test::fmt(r.time_s) +
                          " s, outside [" + test::fmt(lo) + ", " + test::fmt(hi + slack) + "]");
            }
        }
    }
}

// On ring:N the two rings are the two directions of the physical ring: routed count and
// simulator agree with the per-edge form.
static void bidir_ring_on_physical_rings_equals_per_edge_form(void**) {
    for (int n : {3, 4, 5, 8, 12}) {
        auto topo = topology::shape::parse("ring:" + std::to_string(n)).value();
        for (auto coll : ring_primitives) {
            const auto& a = test::find_algorithm(coll, "bidir-ring");
            auto c        = test::make_call(coll, topo, int64_t{n} * 2 * 30);
            test::expect_closed_form(a, c, test::generic_fabric());
            auto q = algorithms::query_for(c, c.count * 4.0, port_model::per_edge);
            auto f = a.predict(q);
            auto p = algorithms::predict(a, c, c.count * 4.0, port_model::per_edge);
            assert_true(test::close_to(f.n_beta, p.n_beta) && f.n_alpha == p.n_alpha);
        }
    }
}

LOOM_TEST_MAIN("fabric_sim_rings",
               cmocka_unit_test(bidir_ring_per_edge_equals_closed_form_on_stars),
               cmocka_unit_test(bidir_ring_single_port_within_lockstep_form),
               cmocka_unit_test(bidir_ring_on_physical_rings_equals_per_edge_form))
