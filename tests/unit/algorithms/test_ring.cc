// Ring family: verified over the sweep, and its counted rounds/bytes equal the
// stated closed forms (f000 §5.1: N=4 all-reduce is 6α + 1.5·M/BW).
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;

static void expect_sweep(schedule::collective coll) {
    const auto* a = algorithms::find(coll, "ring");
    assert_non_null(a);
    auto res = test::sweep(*a, test::standard_ranks(), 1000003, test::standard_lattices());
    if (!res.first_failure.empty()) {
        LOOM_FAIL(res.first_failure);
    }
    assert_int_equal(res.not_applicable, 0);
    assert_true(res.verified > 300);
}

static void ring_allreduce_verifies_over_sweep(void**) {
    expect_sweep(schedule::collective::allreduce);
}
static void ring_reduce_scatter_verifies_over_sweep(void**) {
    expect_sweep(schedule::collective::reduce_scatter);
}
static void ring_allgather_verifies_over_sweep(void**) {
    expect_sweep(schedule::collective::allgather);
}
static void ring_broadcast_verifies_over_sweep(void**) {
    expect_sweep(schedule::collective::broadcast);
}
static void ring_reduce_verifies_over_sweep(void**) {
    expect_sweep(schedule::collective::reduce);
}

// Counted rounds and bytes equal the closed form, for every N up to 64 (count divisible).
static void ring_counts_equal_closed_forms(void**) {
    for (auto coll : {schedule::collective::allreduce, schedule::collective::reduce_scatter,
                      schedule::collective::allgather, schedule::collective::broadcast,
                      schedule::collective::reduce}) {
        const auto* a = algorithms::find(coll, "ring");
        for (int n : test::standard_ranks()) {
            for (int p : {1, 4}) {
                algorithms::call c;
                c.coll     = coll;
                c.nranks   = n;
                c.count    = int64_t{n} * 64 * 4;
                c.segments = p;
                c.topo     = topology::shape::star(n);
                schedule::schedule_stats st;
                auto err = test::verify_call(*a, c, &st);
                if (!err.empty()) {
                    LOOM_FAIL(err);
                }
                double m = c.count * 4.0;
                auto cost =
                    a->predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
                if (st.rounds != cost.n_alpha || st.edge_bytes != cost.n_beta * m) {
                    LOOM_FAIL(
                        test::describe_call(*a, c) + ": counted " + std::to_string(st.rounds) +
                        " rounds, " + std::to_string(st.edge_bytes) + " B; stated " +
                        std::to_string(cost.n_alpha) + ", " + std::to_string(cost.n_beta * m));
                }
                // One link in, one out per step: the single-port count is the same.
                assert_true(st.port_bytes == st.edge_bytes);
            }
        }
    }
}

static void ring_allreduce_n4_is_6_alpha_1_5_beta(void**) {
    const auto* a = algorithms::find(schedule::collective::allreduce, "ring");
    algorithms::cost_query q;
    q.nranks  = 4;
    q.bytes   = 1e6;
    auto cost = a->predict(q);
    assert_true(cost.n_alpha == 6);
    assert_true(cost.n_beta == 1.5);
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_allreduce_verifies_over_sweep),
        cmocka_unit_test(ring_reduce_scatter_verifies_over_sweep),
        cmocka_unit_test(ring_allgather_verifies_over_sweep),
        cmocka_unit_test(ring_broadcast_verifies_over_sweep),
        cmocka_unit_test(ring_reduce_verifies_over_sweep),
        cmocka_unit_test(ring_counts_equal_closed_forms),
        cmocka_unit_test(ring_allreduce_n4_is_6_alpha_1_5_beta),
    };
    return LOOM_RUN_TESTS("algorithms_ring", tests);
}
