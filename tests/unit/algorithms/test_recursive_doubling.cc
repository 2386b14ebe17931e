// Recursive-doubling family: verified over the sweep; counted rounds and bytes equal
// the stated closed forms for powers of two and for the fold / dissemination forms of other
// N, under both port models; the partners follow the documented patterns; f000 B.1 / B.4 at
// N = 4 (2α + 2·M/BW; 2α + 0.75·M/BW).
#include <cmath>
#include <string>
#include <vector>

#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static const algorithms::algorithm& algo(collective coll) {
    const auto* a = algorithms::find(
        coll, coll == collective::reduce_scatter ? "recursive-halving" : "recursive-doubling");
    assert_non_null(a);
    return *a;
}

static algorithms::call make_call(collective coll, int n, int64_t count) {
    algorithms::call c;
    c.coll   = coll;
    c.nranks = n;
    c.count  = count;
    c.topo   = topology::shape::star(n);
    return c;
}

static void expect_sweep(collective coll) {
    auto res = test::sweep(algo(coll), test::standard_ranks(), 1000003, test::standard_lattices());
    if (!res.first_failure.empty()) {
        LOOM_FAIL(res.first_failure);
    }
    assert_int_equal(res.not_applicable, 0);
    assert_true(res.verified > 300);
}

static void recursive_doubling_allreduce_verifies_over_sweep(void**) {
    expect_sweep(collective::allreduce);
}
static void recursive_doubling_allgather_verifies_over_sweep(void**) {
    expect_sweep(collective::allgather);
}
static void recursive_halving_reduce_scatter_verifies_over_sweep(void**) {
    expect_sweep(collective::reduce_scatter);
}

// Counted rounds == n_alpha; edge bytes (per-edge) and port bytes (single-port) == n_beta·M.
static void expect_counts_equal_closed_forms(collective coll) {
    const auto& a = algo(coll);
    std::vector<int> ns;
    for (int n = 1; n <= 40; ++n) {
        ns.push_back(n);
    }
    for (int n : {48, 63, 64, 96, 100, 128}) {
        ns.push_back(n);
    }
    for (int n : ns) {
        auto c = make_call(coll, n, int64_t{n} * 64);  // N divides the count
        schedule::schedule_stats st;
        auto err = test::verify_call(a, c, &st);
        if (!err.empty()) {
            LOOM_FAIL(err);
        }
        double m = c.count * 4.0;
        for (auto ports : {algorithms::port_model::per_edge, algorithms::port_model::single_port}) {
            auto cost = a.predict(algorithms::query_for(c, m, ports));
            double counted =
                ports == algorithms::port_model::per_edge ? st.edge_bytes : st.port_bytes;
            if (st.rounds != cost.n_alpha || std::fabs(counted - cost.n_beta * m) > 1e-9 * m) {
                LOOM_FAIL(test::describe_call(a, c) + " " +
                          std::string(algorithms::port_model_name(ports)) + ": counted " +
                          std::to_string(st.rounds) + " rounds, " + std::to_string(counted) +
                          " B; stated " + std::to_string(cost.n_alpha) + ", " +
                          std::to_string(cost.n_beta * m));
            }
        }
    }
}

static void recursive_doubling_allreduce_counts_equal_closed_forms(void**) {
    expect_counts_equal_closed_forms(collective::allreduce);
}
static void recursive_doubling_allgather_counts_equal_closed_forms(void**) {
    expect_counts_equal_closed_forms(collective::allgather);
}
static void recursive_halving_reduce_scatter_counts_equal_closed_forms(void**) {
    expect_counts_equal_closed_forms(collective::reduce_scatter);
}

static void expect_cost(collective coll, int n, double n_alpha, double n_beta) {
    algorithms::cost_query q;
    q.coll    = coll;
    q.nranks  = n;
    q.bytes   = 1e6;
    auto cost = algo(coll).predict(q);
    if (cost.n_alpha != n_alpha || std::fabs(cost.n_beta - n_beta) > 1e-12) {
        LOOM_FAIL("N=" + std::to_string(n) + ": stated " + std::to_string(cost.n_alpha) + "α + " +
                  std::to_string(cost.n_beta) + "·M/BW, expected " + std::to_string(n_alpha) +
                  "α + " + std::to_string(n_beta) + "·M/BW");
    }
}

// f000 B.1 (N=4: 2α + 2·M/BW) and the fold's (⌊log2N⌋+2)(α + M/BW) for other N.
static void recursive_doubling_allreduce_closed_form_values(void**) {
    expect_cost(collective::allreduce, 1, 0, 0);
    expect_cost(collective::allreduce, 2, 1, 1);
    expect_cost(collective::allreduce, 4, 2, 2);
    expect_cost(collective::allreduce, 64, 6, 6);
    expect_cost(collective::allreduce, 3, 3, 3);
    expect_cost(collective::allreduce, 6, 4, 4);
    expect_cost(collective::allreduce, 100, 8, 8);
}

// f000 B.4 (N=4: 2α + 0.75·M/BW), and ⌈log2N⌉α + (N-1)/N·M/BW for every N.
static void recursive_doubling_allgather_reduce_scatter_closed_form_values(void**) {
    for (auto coll : {collective::allgather, collective::reduce_scatter}) {
        expect_cost(coll, 1, 0, 0);
        expect_cost(coll, 4, 2, 0.75);
        expect_cost(coll, 5, 3, 0.8);
        expect_cost(coll, 6, 3, 5.0 / 6);
        expect_cost(coll, 64, 6, 63.0 / 64);
    }
}

// The peers of rank r's sends, in schedule order.
static std::vector<int> send_peers(collective coll, int n, int r) {
    auto s = algorithms::generate(algo(coll), make_call(coll, n, int64_t{n} * 8));
    assert_true(s.is_ok());
    std::vector<int> peers;
    for (const auto& st : s->ranks[r].steps) {
        if (st.kind == schedule::step_kind::send) {
            peers.push_back(st.peer);
        }
    }
    return peers;
}

static void expect_peers(collective coll, int n, int r, const std::vector<int>& want) {
    auto got = send_peers(coll, n, r);
    if (got != want) {
        std::string g, w;
        for (int p : got) {
            g += std::to_string(p) + " ";
        }
        for (int p : want) {
            w += std::to_string(p) + " ";
        }
        LOOM_FAIL(std::string(schedule::collective_name(coll)) + " N=" + std::to_string(n) +
                  " rank " + std::to_string(r) + " sends to [" + g + "], expected [" + w + "]");
    }
}

// N = 2^k: XOR partners, all-gather at distance 1, 2, 4; reduce-scatter 4, 2, 1 (f004 order).
static void recursive_doubling_power_of_two_uses_butterfly_partners(void**) {
    for (int r = 0; r < 8; ++r) {
        expect_peers(collective::allreduce, 8, r, {r ^ 1, r ^ 2, r ^ 4});
        expect_peers(collective::allgather, 8, r, {r ^ 1, r ^ 2, r ^ 4});
        expect_peers(collective::reduce_scatter, 8, r, {r ^ 4, r ^ 2, r ^ 1});
    }
}

// Other N: all-gather sends to r-1, r-2, r-4 (mod N), reduce-scatter to r+4, r+2, r+1.
static void recursive_doubling_other_n_uses_dissemination_partners(void**) {
    for (int r = 0; r < 6; ++r) {
        expect_peers(collective::allgather, 6, r, {(r + 5) % 6, (r + 4) % 6, (r + 2) % 6});
        expect_peers(collective::reduce_scatter, 6, r, {(r + 4) % 6, (r + 2) % 6, (r + 1) % 6});
    }
}

// The fold at N = 6 (N' = 4, two pairs): ranks 1 and 3 only hand their vector to 0 and 2 and
// get the result back; 0, 2, 4, 5 run the butterfly as virtual ranks 0..3; no rank ever talks
// to two peers in one round (so single-port = per-edge).
static void recursive_doubling_allreduce_folds_other_n(void**) {
    expect_peers(collective::allreduce, 6, 1, {0});
    expect_peers(collective::allreduce, 6, 3, {2});
    expect_peers(collective::allreduce, 6, 0, {2, 4, 1});
    expect_peers(collective::allreduce, 6, 2, {0, 5, 3});
    expect_peers(collective::allreduce, 6, 4, {5, 0});
    expect_peers(collective::allreduce, 6, 5, {4, 2});
    for (int n : {3, 6, 7, 12, 24}) {
        schedule::schedule_stats st;
        auto err = test::verify_call(algo(collective::allreduce),
                                     make_call(collective::allreduce, n, n * 16), &st);
        if (!err.empty()) {
            LOOM_FAIL(err);
        }
        for (const auto& rs : st.per_rank) {
            assert_int_equal(rs.max_concurrent_peers, 1);
        }
    }
}

// Channels run the algorithm on slices with stacked scratch (registry.cc): still exact.
static void recursive_doubling_allreduce_verifies_with_channels(void**) {
    for (int n : {2, 3, 4, 6, 8, 12}) {
        for (int channels : {2, 3}) {
            algorithms::call c;
            c.coll     = collective::allreduce;
            c.nranks   = n;
            c.count    = 1001;
            c.channels = channels;
            c.topo     = topology::shape::star(n);
            auto err   = test::verify_call(algo(collective::allreduce), c);
            if (!err.empty()) {
                LOOM_FAIL(err + " channels=" + std::to_string(channels));
            }
        }
    }
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recursive_doubling_allreduce_verifies_over_sweep),
        cmocka_unit_test(recursive_doubling_allgather_verifies_over_sweep),
        cmocka_unit_test(recursive_halving_reduce_scatter_verifies_over_sweep),
        cmocka_unit_test(recursive_doubling_allreduce_counts_equal_closed_forms),
        cmocka_unit_test(recursive_doubling_allgather_counts_equal_closed_forms),
        cmocka_unit_test(recursive_halving_reduce_scatter_counts_equal_closed_forms),
        cmocka_unit_test(recursive_doubling_allreduce_closed_form_values),
        cmocka_unit_test(recursive_doubling_allgather_reduce_scatter_closed_form_values),
        cmocka_unit_test(recursive_doubling_power_of_two_uses_butterfly_partners),
        cmocka_unit_test(recursive_doubling_other_n_uses_dissemination_partners),
        cmocka_unit_test(recursive_doubling_allreduce_folds_other_n),
        cmocka_unit_test(recursive_doubling_allreduce_verifies_with_channels),
    };
    return LOOM_RUN_TESTS("algorithms_recursive_doubling", tests);
}
