// SPDX-License-Identifier: Apache-2.0
// Double binary tree all-reduce: verified over the sweep (P = 1) and a pipelined
// sweep; counted rounds/bytes equal the stated per-edge form (Lu-CA §5.2 at P = 1: N=4 is
// 4α + 2·M/BW, not ring's 1.5, docs/references.md#dbt-n4-vs-ring); the single-port count is exact
// where stated and inside the stated bounds elsewhere (docs/references.md#dbt-pipelined-floor,
// docs/references.md#port-model); the two trees are complementary and, from N = 4 on,
// edge-disjoint (docs/references.md#dbt-edge-disjoint).
#include <algorithm>
#include <set>

#include "algorithms/util.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using algorithms::port_model;

static const algorithms::algorithm* dbt() {
    return &test::find_algorithm(schedule::collective::allreduce, "dbt");
}

static algorithms::call dbt_call(int n, int64_t count, int segments) {
    return test::make_call(schedule::collective::allreduce, n, count, 0, segments);
}

static schedule::schedule_stats verified(const algorithms::call& c) {
    return test::expect_verifies(*dbt(), c);
}

static void dbt_allreduce_verifies_over_sweep(void**) {
    test::expect_clean_sweep(*dbt());
}

// The sweep runs P = 1 only; pipelining must hold for counts that P or 2 do not
// divide, including halves shorter than P (empty segments) and count 0.
static void dbt_pipelined_verifies_for_awkward_counts(void**) {
    for (int n : test::standard_ranks()) {
        for (int p : {2, 3, 7}) {
            for (int64_t count :
                 {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{2 * p - 1}, int64_t{10007}}) {
                verified(dbt_call(n, count, p));
            }
        }
    }
}

// Per-edge: rounds = (2D+P-1), edge bytes = (2D+P-1)/(2P)·M with D = ⌈log2N⌉, for every N up
// to 64 (counts that 2P divides); at P = 1 that is the texts' 2⌈log2N⌉α + ⌈log2N⌉·M/BW.
static void dbt_counts_equal_per_edge_closed_form(void**) {
    for (int n = 1; n <= 64; ++n) {
        for (int p : {1, 2, 3, 4, 8}) {
            auto c    = dbt_call(n, int64_t{2} * p * 24, p);
            auto st   = verified(c);
            double m  = c.count * 4.0;
            auto cost = dbt()->predict(algorithms::query_for(c, m, port_model::per_edge));
            if (st.rounds != cost.n_alpha || st.edge_bytes != cost.n_beta * m || !cost.exact) {
                LOOM_FAIL(test::describe_call(*dbt(), c) + ": counted " +
                          std::to_string(st.rounds) + " rounds, " + std::to_string(st.edge_bytes) +
                          " B; stated " + std::to_string(cost.n_alpha) + ", " +
                          std::to_string(cost.n_beta * m));
            }
            if (p == 1 && n > 1) {
                int d = algorithms::ceil_log2(n);
                assert_true(cost.n_alpha == 2 * d && cost.n_beta == d);
            }
        }
    }
}

// Single-port: exact where predict says so (N = 2; N = 2^D at P = 1), otherwise between the
// header's lower bound and predict's upper bound.
static void dbt_single_port_count_within_stated_form(void**) {
    int exact_cases = 0;
    for (int n = 2; n <= 64; ++n) {
        for (int p : {1, 2, 3, 4, 8}) {
            auto c           = dbt_call(n, int64_t{2} * p * 24, p);
            auto st          = verified(c);
            double m         = c.count * 4.0;
            auto cost        = dbt()->predict(algorithms::query_for(c, m, port_model::single_port));
            double port      = st.port_bytes / m;
            std::string what = test::describe_call(*dbt(), c) + ": single-port counted " +
                               std::to_string(port) + "·M, stated " + std::to_string(cost.n_beta) +
                               (cost.exact ? "" : " (bound)");
            assert_true(cost.n_alpha == st.rounds);
            if (cost.exact) {
                ++exact_cases;
                if (port != cost.n_beta) {
                    LOOM_FAIL(what);
                }
                continue;
            }
            int d = algorithms::ceil_log2(n);
            // N = 4's floor is three halves per port (its trees give no rank a parent and two
            // children); from N = 5 on some rank passes 2M.
            double floor = n >= 5 ? 2.0 : n == 4 ? 1.5 : 0.0;
            double lower = p == 1 ? 2.0 * d - 2 : std::max(st.edge_bytes / m, floor);
            if (port < lower || port > cost.n_beta) {
                LOOM_FAIL(what + ", lower bound " + std::to_string(lower));
            }
        }
    }
    // N = 2 for five P, N = 4 at P = 1 and 2, and N = 8, 16, 32, 64 at P = 1.
    assert_int_equal(exact_cases, 5 + 2 + 4);
}

// Lu-CA §5.2 at N = 4: 4α + 2·M/BW per-edge, counted and predicted; ring is 1.5
// (docs/references.md#dbt-n4-vs-ring).
static void dbt_n4_is_4_alpha_2_beta_not_ring(void**) {
    auto c        = dbt_call(4, 4096, 1);
    auto st       = verified(c);
    double m      = c.count * 4.0;
    auto q        = algorithms::query_for(c, m, port_model::per_edge);
    auto dbt_cost = dbt()->predict(q);
    assert_true(dbt_cost.n_alpha == 4 && dbt_cost.n_beta == 2 && dbt_cost.exact);
    assert_int_equal(st.rounds, 4);
    assert_true(st.edge_bytes == 2 * m);
    const auto* ring = algorithms::find(schedule::collective::allreduce, "ring");
    assert_non_null(ring);
    assert_true(ring->predict(q).n_beta == 1.5);
}

// docs/references.md#port-model: under one port per rank DBT at N = 4 costs 2.5·M/BW (three
// halves through every port, and the two rounds around the roots move one), above the
// per-edge 2.
static void dbt_n4_single_port_exceeds_per_edge(void**) {
    auto c   = dbt_call(4, 4096, 1);
    auto st  = verified(c);
    double m = c.count * 4.0;
    auto sp  = dbt()->predict(algorithms::query_for(c, m, port_model::single_port));
    auto pe  = dbt()->predict(algorithms::query_for(c, m, port_model::per_edge));
    assert_true(sp.exact && sp.n_beta == 2.5 && pe.n_beta == 2);
    assert_true(st.port_bytes == 2.5 * m);
    assert_true(st.port_bytes > st.edge_bytes);
}

// docs/references.md#dbt-pipelined-floor: pipelining drives the per-edge count below Lu-CA's
// headline M/BW toward M/(2BW), while the single-port count stays at or above 2·M/BW.
static void dbt_pipelined_floors_are_half_per_edge_two_single_port(void**) {
    auto c   = dbt_call(8, int64_t{2} * 64 * 8, 64);
    auto st  = verified(c);
    double m = c.count * 4.0;
    assert_true(st.edge_bytes / m == (6 + 63) / 128.0);
    assert_true(st.edge_bytes < m);
    assert_true(st.port_bytes >= 2 * m);
    auto q      = algorithms::query_for(dbt_call(8, 1 << 20, 1 << 16), m, port_model::per_edge);
    double beta = dbt()->predict(q).n_beta;
    assert_true(beta > 0.5 && beta < 0.501);
}

// The tree of `tag` as the schedule shows it: rank r is interior when its first transfer on
// that tag is a receive (it must hear from a child before it can send), a leaf when it is a
// send (its own input goes up first). Peers give the tree's edges.
struct tree_view {
    std::vector<bool> interior;
    std::vector<std::set<int>> peers;
};

static tree_view view_tree(const schedule::schedule& s, uint32_t tag) {
    int n = s.info.nranks;
    tree_view v{std::vector<bool>(n, false), std::vector<std::set<int>>(n)};
    for (int r = 0; r < n; ++r) {
        bool first = true;
        for (const auto& st : s.ranks[r].steps) {
            if (!schedule::is_transfer(st.kind) || st.tag != tag) {
                continue;
            }
            if (first) {
                v.interior[r] = schedule::is_receive(st.kind);
                first         = false;
            }
            v.peers[r].insert(st.peer);
        }
    }
    return v;
}

// Spanning and binary: N-1 edges, all ranks reachable from rank 0, at most 3 neighbours.
static void expect_binary_spanning_tree(const tree_view& v, int n, const std::string& what) {
    size_t degree_sum = 0;
    for (int r = 0; r < n; ++r) {
        degree_sum += v.peers[r].size();
        if (v.peers[r].size() > 3) {
            LOOM_FAIL(what + ": rank " + std::to_string(r) + " has more than 3 tree neighbours");
        }
    }
    std::vector<bool> seen(n, false);
    std::vector<int> todo{0};
    seen[0]     = true;
    int reached = 1;
    while (!todo.empty()) {
        int r = todo.back();
        todo.pop_back();
        for (int q : v.peers[r]) {
            if (!seen[q]) {
                seen[q] = true;
                ++reached;
                todo.push_back(q);
            }
        }
    }
    if (degree_sum != 2 * static_cast<size_t>(n - 1) || reached != n) {
        LOOM_FAIL(what + ": not a spanning tree");
    }
}

static void dbt_trees_are_complementary_for_n_1_to_64(void**) {
    for (int n = 1; n <= 64; ++n) {
        auto c = dbt_call(n, 2 * n, 1);
        verified(c);
        auto s  = test::generate_ok(*dbt(), c);
        auto t0 = view_tree(s, 0), t1 = view_tree(s, 1);
        std::string what = "N=" + std::to_string(n);
        if (n > 1) {
            expect_binary_spanning_tree(t0, n, what + " tree 0");
            expect_binary_spanning_tree(t1, n, what + " tree 1");
        }
        for (int r = 0; r < n; ++r) {
            int interior = t0.interior[r] + t1.interior[r];
            // At most one (the DBT property); for N ≥ 2 exactly one, so no rank is a leaf in
            // both trees either.
            if (interior > 1 || (n > 1 && interior != 1)) {
                LOOM_FAIL(what + ": rank " + std::to_string(r) + " is interior in " +
                          std::to_string(interior) + " trees");
            }
        }
    }
}

// The undirected rank pairs of a tree view.
static std::set<std::pair<int, int>> tree_pairs(const tree_view& v) {
    std::set<std::pair<int, int>> pairs;
    for (int r = 0; r < static_cast<int>(v.peers.size()); ++r) {
        for (int q : v.peers[r]) {
            pairs.insert({std::min(r, q), std::max(r, q)});
        }
    }
    return pairs;
}

// docs/references.md#dbt-edge-disjoint: from N = 4 on no rank pair is an edge of both trees
// (N = 4..300, and 1024 and 4096 where the leaf move's cycle is long); N = 2 and 3 have too
// few pairs and share exactly one.
static void dbt_trees_are_edge_disjoint_from_n_4(void**) {
    std::vector<int> ranks;
    for (int n = 2; n <= 300; ++n) {
        ranks.push_back(n);
    }
    ranks.push_back(1024);
    ranks.push_back(4096);
    for (int n : ranks) {
        auto s  = test::generate_ok(*dbt(), dbt_call(n, 2 * n, 1));
        auto t0 = view_tree(s, 0), t1 = view_tree(s, 1);
        std::string what = "N=" + std::to_string(n);
        expect_binary_spanning_tree(t0, n, what + " tree 0");
        expect_binary_spanning_tree(t1, n, what + " tree 1");
        auto p0 = tree_pairs(t0), p1 = tree_pairs(t1);
        int shared = 0;
        for (const auto& e : p1) {
            shared += static_cast<int>(p0.count(e));
        }
        if (shared != (n <= 3 ? 1 : 0)) {
            LOOM_FAIL(what + ": " + std::to_string(shared) + " rank pairs are edges of both trees");
        }
    }
}

// The trees at N = 4 (the table): tree 0 is 0→{1,2}, 1→3, tree 1 is 2→{1,3}, 3→0; NCCL's
// pair (0→2→{1,3} and its mirror) shares 1–2.
static void dbt_n4_trees_are_the_edge_disjoint_table(void**) {
    auto s  = test::generate_ok(*dbt(), dbt_call(4, 8, 1));
    auto t0 = view_tree(s, 0), t1 = view_tree(s, 1);
    assert_true((t0.peers[0] == std::set<int>{1, 2}) && (t0.peers[1] == std::set<int>{0, 3}));
    assert_true((t0.peers[2] == std::set<int>{0}) && (t0.peers[3] == std::set<int>{1}));
    assert_true((t1.peers[2] == std::set<int>{1, 3}) && (t1.peers[3] == std::set<int>{0, 2}));
    assert_true((t1.peers[1] == std::set<int>{2}) && (t1.peers[0] == std::set<int>{3}));
    assert_true(t0.interior[0] && t0.interior[1] && t1.interior[2] && t1.interior[3]);
}

// On a lattice the links are physical, so the trees stay NCCL's, whose neighbours are close:
// at N = 4 tree 0 is 0→2→{1,3} (ncclGetBtree), tree 1 its mirror 3→1→{2,0}; at N = 8 (ring:8
// and torus:2x2x2) every rank's tree-1 peers are its tree-0 peers mirrored.
static void dbt_on_a_lattice_keeps_nccl_trees(void**) {
    auto on = [](const char* topo, int64_t count) {
        return test::make_call(schedule::collective::allreduce,
                               topology::shape::parse(topo).value(), count);
    };
    for (const char* topo : {"ring:4", "torus:2x2", "mesh:2x2"}) {
        auto s  = test::generate_ok(*dbt(), on(topo, 8));
        auto t0 = view_tree(s, 0), t1 = view_tree(s, 1);
        assert_true((t0.peers[0] == std::set<int>{2}) && (t0.peers[2] == std::set<int>{0, 1, 3}));
        assert_true((t0.peers[1] == std::set<int>{2}) && (t0.peers[3] == std::set<int>{2}));
        assert_true((t1.peers[3] == std::set<int>{1}) && (t1.peers[1] == std::set<int>{0, 2, 3}));
        assert_true((t1.peers[0] == std::set<int>{1}) && (t1.peers[2] == std::set<int>{1}));
        assert_true(t0.interior[0] && t0.interior[2] && t1.interior[3] && t1.interior[1]);
    }
    for (const char* topo : {"ring:8", "torus:2x2x2"}) {
        auto s  = test::generate_ok(*dbt(), on(topo, 16));
        auto t0 = view_tree(s, 0), t1 = view_tree(s, 1);
        for (int r = 0; r < 8; ++r) {
            std::set<int> mirrored;
            for (int q : t0.peers[7 - r]) {
                mirrored.insert(7 - q);
            }
            assert_true(t1.peers[r] == mirrored);
        }
    }
}

LOOM_TEST_MAIN("algorithms_double_binary_tree", cmocka_unit_test(dbt_allreduce_verifies_over_sweep),
               cmocka_unit_test(dbt_pipelined_verifies_for_awkward_counts),
               cmocka_unit_test(dbt_counts_equal_per_edge_closed_form),
               cmocka_unit_test(dbt_single_port_count_within_stated_form),
               cmocka_unit_test(dbt_n4_is_4_alpha_2_beta_not_ring),
               cmocka_unit_test(dbt_n4_single_port_exceeds_per_edge),
               cmocka_unit_test(dbt_pipelined_floors_are_half_per_edge_two_single_port),
               cmocka_unit_test(dbt_trees_are_complementary_for_n_1_to_64),
               cmocka_unit_test(dbt_trees_are_edge_disjoint_from_n_4),
               cmocka_unit_test(dbt_n4_trees_are_the_edge_disjoint_table),
               cmocka_unit_test(dbt_on_a_lattice_keeps_nccl_trees))
