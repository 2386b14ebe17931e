// SPDX-License-Identifier: Apache-2.0
// The simulator reproduces every exact closed form (relative error < 1e-9 in time, n_alpha
// and n_beta), under the port model the formula states, over many N and shapes. Counts are
// multiples of N (and of P) so blocks and segments are equal, as the forms assume.
#include "algorithms/util.hh"
#include "sim_test.hh"
#include "test_case.hh"

using namespace loom;
using algorithms::port_model;
using schedule::collective;

namespace {

const std::vector<port_model> both_ports = {port_model::per_edge, port_model::single_port};

// `name` for `coll` on star:N for every N of the issue, under `ports`.
void expect_on_stars(collective coll, const char* name, const std::vector<port_model>& ports,
                     int64_t per_rank = 60, bool roots = false) {
    const auto& a = test::find_algorithm(coll, name);
    for (int n : test::standard_ranks()) {
        for (int root : roots ? std::vector<int>{0, n - 1, n / 2} : std::vector<int>{0}) {
            auto c = test::make_call(coll, n, n * per_rank, root);
            for (port_model p : ports) {
                test::expect_closed_form(a, c, test::generic_fabric(p));
            }
        }
    }
}

}  // namespace

static void ring_allreduce_reduce_scatter_allgather_equal_closed_forms(void**) {
    for (auto coll : {collective::allreduce, collective::reduce_scatter, collective::allgather}) {
        expect_on_stars(coll, "ring", both_ports);
    }
}

static void ring_chain_broadcast_reduce_unpipelined_equal_closed_forms(void**) {
    expect_on_stars(collective::broadcast, "ring", both_ports, 60, true);
    expect_on_stars(collective::reduce, "ring", both_ports, 60, true);
}

static void recursive_doubling_family_equals_closed_forms(void**) {
    expect_on_stars(collective::allreduce, "recursive-doubling", both_ports);
    expect_on_stars(collective::allgather, "recursive-doubling", both_ports);
    expect_on_stars(collective::reduce_scatter, "recursive-halving", both_ports);
}

static void binomial_unpipelined_equals_closed_forms(void**) {
    expect_on_stars(collective::broadcast, "binomial", both_ports, 60, true);
    expect_on_stars(collective::reduce, "binomial", both_ports, 60, true);
    expect_on_stars(collective::allreduce, "reduce-broadcast", both_ports);
}

// (L+N-1)α + 2(N-1)/N·M/BW, per-edge and single-port, every N of the issue and three roots;
// with segments asked for too (P is not used, so the form is the same).
static void scatter_allgather_equals_closed_form(void**) {
    expect_on_stars(collective::broadcast, "scatter-allgather", both_ports, 60, true);
    const auto& a = test::find_algorithm(collective::broadcast, "scatter-allgather");
    for (int n : {3, 8, 13}) {
        for (port_model p : both_ports) {
            test::expect_closed_form(a, test::make_call(collective::broadcast, n, n * 60, 1, 4),
                                     test::generic_fabric(p));
        }
    }
}

// Uneven blocks (count % N ≠ 0) and empty ones (count < N): the simulated time lies between
// the header's bounds, (L+N-1)α + 2(N-1)·⌊c/N⌋·s/BW and (L+N-1)α + (c + (N-2)·⌈c/N⌉)·s/BW
// (the scatter is exactly (c - ⌈c/N⌉)·s/BW, each ring step moves at most ⌈c/N⌉).
static void scatter_allgather_uneven_blocks_within_bounds(void**) {
    const auto& a = test::find_algorithm(collective::broadcast, "scatter-allgather");
    int checked   = 0;
    for (int n : test::standard_ranks()) {
        if (n == 1) {
            continue;
        }
        for (int64_t count :
             {int64_t{1}, int64_t{n - 1}, int64_t{n} * 60 + 1, int64_t{n} * 60 + n - 1}) {
            for (port_model p : both_ports) {
                auto f      = test::generic_fabric(p);
                auto c      = test::make_call(collective::broadcast, n, count, n / 2);
                auto r      = test::simulate_call(a, c, f);
                double s    = c.dtype_size / f.bw_bytes_per_s;
                double hops = (algorithms::ceil_log2(n) + n - 1) * f.alpha_s;
                double lo   = hops + 2.0 * (n - 1) * static_cast<double>(count / n) * s;
                double ceil = static_cast<double>((count + n - 1) / n);
                double hi   = hops + (static_cast<double>(count) + (n - 2) * ceil) * s;
                if (r.time_s < lo * (1 - 1e-9) || r.time_s > hi * (1 + 1e-9)) {
                    LOOM_FAIL(test::describe_call(a, c) + " " + test::ports_name(f) +
                              ": simulated " + test::fmt(r.time_s) + " s, outside [" +
                              test::fmt(lo) + ", " + test::fmt(hi) + "]");
                }
                ++checked;
            }
        }
    }
    assert_true(checked > 100);
}

// DBT at P = 1: per-edge for every N; single-port where the form is exact (N = 2^D, and N = 4
// at P ≤ 2).
static void dbt_unpipelined_equals_closed_forms(void**) {
    expect_on_stars(collective::allreduce, "dbt", {port_model::per_edge});
    const auto& a = test::find_algorithm(collective::allreduce, "dbt");
    for (int n : {2, 4, 8, 16, 32, 64}) {
        test::expect_closed_form(a, test::make_call(collective::allreduce, n, n * 60),
                                 test::generic_fabric(port_model::single_port));
    }
    // N = 4 (the edge-disjoint table) is exact for P ≤ 2.
    for (int p : {1, 2}) {
        test::expect_closed_form(a, test::make_call(collective::allreduce, 4, 2 * p * 30, 0, p),
                                 test::generic_fabric(port_model::single_port));
    }
}

static void pat_bruck_and_sendrecv_equal_closed_forms(void**) {
    expect_on_stars(collective::reduce_scatter, "pat", both_ports);
    expect_on_stars(collective::allgather, "pat", both_ports);
    expect_on_stars(collective::alltoall, "bruck", both_ports, 5);
    const auto& a = test::find_algorithm(collective::sendrecv, "direct");
    for (int n : {2, 5, 16}) {
        auto c = test::make_call(collective::sendrecv, n, 1000, n - 1);
        c.peer = 0;
        test::expect_closed_form(a, c, test::generic_fabric());
    }
}

// Meshes whose all-gather phases after the first have a line of 5 or more: a global lockstep
// count charges interior lines that start the next phase early, but the run does not wait for
// rounds and reaches Lu-TM §4.2's (N-1)/N, which is the stated form (torus_dims.cc).
static bool lockstep_mesh_allgather_differs(const topology::shape& t) {
    if (t.wraps()) {
        return false;
    }
    bool first = true;
    for (int d : t.dims()) {
        if (d > 1) {
            if (!first && d >= 5) {
                return true;
            }
            first = false;
        }
    }
    return false;
}

static void dims_equal_closed_forms_on_tori_and_meshes(void**) {
    std::vector<std::string> shapes = test::standard_lattices();
    for (const char* extra : {"torus:16x4", "torus:6x2x3", "ring:12", "mesh:4x3x2", "torus:8x8"}) {
        shapes.push_back(extra);
    }
    int checked = 0;
    for (const std::string& text : shapes) {
        auto topo = topology::shape::parse(text).value();
        int n     = topo.size();
        for (auto coll : {collective::allreduce, collective::reduce_scatter, collective::allgather,
                          collective::broadcast, collective::reduce, collective::alltoall}) {
            const auto& a = test::find_algorithm(coll, "dims");
            int64_t count = coll == collective::alltoall ? 12 : int64_t{n} * 24;
            for (int root : {0, n - 1}) {
                auto c = test::make_call(coll, topo, count, root);
                for (port_model p : both_ports) {
                    test::expect_closed_form(a, c, test::generic_fabric(p));
                    ++checked;
                }
            }
        }
    }
    assert_true(checked > 200);
}

// mesh 3x5: all-gather 14/15, all-reduce 28/15 per byte, stated and simulated (a lockstep
// count gives 6/5 and 32/15); the same on shapes with a line of 5 or more after the first.
static void dims_mesh_allgather_reaches_asynchronous_form(void**) {
    int checked = 0;
    for (const char* text :
         {"mesh:3x5", "mesh:5x3", "mesh:7x2", "mesh:2x7", "mesh:5x5x3", "mesh:3x5x5", "mesh:3x4x5",
          "mesh:2x6", "mesh:3x7", "mesh:4x5x5", "mesh:6x5", "mesh:5x5"}) {
        auto topo = topology::shape::parse(text).value();
        double n  = topo.size();
        for (auto coll : {collective::allgather, collective::allreduce}) {
            const auto& a   = test::find_algorithm(coll, "dims");
            auto c          = test::make_call(coll, topo, topo.size() * 24);
            auto f          = test::generic_fabric();
            auto r          = test::simulate_call(a, c, f);
            double traverse = 0;
            for (int d : topo.dims()) {
                traverse += d - 1;
            }
            int k         = coll == collective::allreduce ? 2 : 1;
            double n_beta = k * (n - 1) / n;
            double expected =
                k * traverse * f.alpha_s + n_beta * r.payload_bytes / f.bw_bytes_per_s;
            auto stated = algorithms::predict(a, c, r.payload_bytes, f.ports);
            if (!test::close_to(r.time_s, expected) || !test::close_to(r.n_beta, n_beta) ||
                !test::close_to(stated.n_beta, n_beta) || stated.n_alpha != k * traverse ||
                !stated.exact) {
                LOOM_FAIL(test::describe_call(a, c) + ": simulated n_beta " + test::fmt(r.n_beta) +
                          ", asynchronous form " + test::fmt(n_beta) + ", stated " +
                          test::fmt(stated.n_beta));
            }
            checked += lockstep_mesh_allgather_differs(topo);
        }
    }
    assert_true(checked >= 16);
}

// hier-ring: on a torus its rings are the physical rows and columns, so the simulator, the
// routed count and the closed form 2(G+K-2)α + 2(N-1)/N·M/BW are one number; on a mesh a
// group's ring closes over its line and the simulator equals the routed count.
static void hier_ring_equals_closed_form_on_a_torus_and_routed_count_on_a_mesh(void**) {
    const auto& a = test::find_algorithm(collective::allreduce, "hier-ring");
    for (const char* topo : {"torus:2x2", "torus:4x4", "torus:3x5", "torus:8x8", "torus:6x2",
                             "ring:7", "torus:2x2x2", "mesh:2x2", "mesh:3x4", "mesh:4x4"}) {
        auto shape = topology::shape::parse(topo).value();
        auto c     = test::make_call(collective::allreduce, shape, int64_t{shape.size()} * 30);
        test::expect_closed_form(a, c, test::generic_fabric());
        if (shape.wraps() && shape.ndims() <= 2) {
            double m    = c.count * 4.0;
            auto own    = a.predict(algorithms::query_for(c, m, port_model::per_edge));
            auto routed = algorithms::predict(a, c, m, port_model::per_edge);
            assert_true(test::close_to(own.n_alpha, routed.n_alpha) &&
                        test::close_to(own.n_beta, routed.n_beta));
        }
    }
}

LOOM_TEST_MAIN(
    "fabric_sim_closed_forms",
    cmocka_unit_test(ring_allreduce_reduce_scatter_allgather_equal_closed_forms),
    cmocka_unit_test(ring_chain_broadcast_reduce_unpipelined_equal_closed_forms),
    LOOM_CASE(pairwise_alltoall_equals_closed_form,
              expect_on_stars(collective::alltoall, "pairwise", both_ports, 7)),
    cmocka_unit_test(recursive_doubling_family_equals_closed_forms),
    LOOM_CASE(rabenseifner_equals_closed_form,
              expect_on_stars(collective::allreduce, "rabenseifner", both_ports)),
    cmocka_unit_test(binomial_unpipelined_equals_closed_forms),
    cmocka_unit_test(dbt_unpipelined_equals_closed_forms),
    cmocka_unit_test(scatter_allgather_equals_closed_form),
    cmocka_unit_test(scatter_allgather_uneven_blocks_within_bounds),
    cmocka_unit_test(hier_ring_equals_closed_form_on_a_torus_and_routed_count_on_a_mesh),
    cmocka_unit_test(pat_bruck_and_sendrecv_equal_closed_forms),
    // ring-relay per-edge: its busiest link's waves (docs/references.md#ring-relay-load) are what
    // the simulator sees. Single-port is a lockstep count that the simulator beats or misses by the
    // overlap of the two directions on one port, so only per-edge is an exact form here.
    LOOM_CASE(ring_relay_per_edge_equals_closed_form,
              expect_on_stars(collective::alltoall, "ring-relay", {port_model::per_edge}, 5)),
    cmocka_unit_test(dims_equal_closed_forms_on_tori_and_meshes),
    cmocka_unit_test(dims_mesh_allgather_reaches_asynchronous_form))
