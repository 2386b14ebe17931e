// SPDX-License-Identifier: Apache-2.0
// fabric/control: aggregation trees and routes as the controller serves them, on a
// three-level switch fabric with a dual-homed leaf and a dual-homed rank, and on tori.
// With every node in service the declared tree comes back whole; a node out of service
// (down or drained) is left out: its children take another wired node nearer the root or
// become roots, ranks without an in-service in-network node are cut naming it, and a job
// is told which one tree holds its ranks or why none does. Lattice routes are DOR exactly
// as fabric/routing gives them, naming an out node rather than bending around it; switch
// fabric routes are shortest paths over in-service nodes that never pass through an
// endpoint.
#include <string>
#include <vector>

#include "control/routes.hh"
#include "control/trees.hh"
#include "routing/dateline.hh"
#include "routing/route_table.hh"
#include "test_main.hh"
#include "topology/fabric.hh"

using namespace loom;
using namespace loom::control;

namespace {

// spine <- agg0 <- {leaf0, leaf1}; spine <- agg1 <- leaf2. leaf0 is also wired to agg1;
// h5 hangs off leaf2 first and leaf1 second.
const char* three_levels = R"({"format": "loom-fabric", "version": 1,
 "nodes": [{"id": "h0", "kind": "endpoint", "rank": 0}, {"id": "h1", "kind": "endpoint", "rank": 1},
           {"id": "h2", "kind": "endpoint", "rank": 2}, {"id": "h3", "kind": "endpoint", "rank": 3},
           {"id": "h4", "kind": "endpoint", "rank": 4}, {"id": "h5", "kind": "endpoint", "rank": 5},
           {"id": "leaf0", "kind": "switch", "in_network": true, "parent": "agg0"},
           {"id": "leaf1", "kind": "switch", "in_network": true, "parent": "agg0"},
           {"id": "leaf2", "kind": "switch", "in_network": true, "parent": "agg1"},
           {"id": "agg0", "kind": "switch", "in_network": true, "parent": "spine"},
           {"id": "agg1", "kind": "switch", "in_network": true, "parent": "spine"},
           {"id": "spine", "kind": "switch", "in_network": true}],
 "links": [{"a": "h0", "b": "leaf0", "class": "l"}, {"a": "h1", "b": "leaf0", "class": "l"}, {"a": "h2", "b": "leaf1", "class": "l"},
           {"a": "h3", "b": "leaf1", "class": "l"}, {"a": "h4", "b": "leaf2", "class": "l"}, {"a": "h5", "b": "leaf2", "class": "l"},
           {"a": "h5", "b": "leaf1", "class": "l"},
           {"a": "leaf0", "b": "agg0", "class": "l"}, {"a": "leaf0", "b": "agg1", "class": "l"}, {"a": "leaf1", "b": "agg0", "class": "l"},
           {"a": "leaf2", "b": "agg1", "class": "l"}, {"a": "agg0", "b": "spine", "class": "l"}, {"a": "agg1", "b": "spine", "class": "l"}],
 "classes": {"l": {"alpha": 1e-6, "bw": 25e9}}})";

topology::fabric load(const char* text) {
    auto f = topology::parse_fabric_json(text, "three-levels");
    if (!f) {
        fail_msg("%s", f.error().message().c_str());
    }
    return std::move(f).value();
}

topology::fabric lattice(const char* shape) {
    auto f = topology::load_fabric(shape);
    assert_true(f.is_ok());
    return std::move(f).value();
}

const tree_node* find(const aggregation_tree& t, const std::string& id) {
    for (const tree_node& n : t.nodes) {
        if (n.id == id) {
            return &n;
        }
    }
    return nullptr;
}

std::vector<int> ranks(std::initializer_list<int> list) {
    return list;
}

std::vector<int> all_ranks(const topology::fabric& f) {
    std::vector<int> out;
    for (int r = 0; r < f.nranks(); ++r) {
        out.push_back(r);
    }
    return out;
}

}  // namespace

static void in_service_the_declared_tree_comes_back_whole(void**) {
    auto f    = load(three_levels);
    auto plan = plan_trees(f, {});
    assert_int_equal(plan.in_network_nodes, 6);
    assert_int_equal(plan.trees.size(), 1);
    assert_int_equal(plan.cut.size(), 0);
    const aggregation_tree& t = plan.trees[0];
    assert_string_equal(t.root.c_str(), "spine");
    assert_true(t.as_declared);
    assert_true(t.ranks == ranks({0, 1, 2, 3, 4, 5}));
    std::vector<std::string> order;
    for (const tree_node& n : t.nodes) {
        order.push_back(n.id);
    }
    assert_true(order ==
                std::vector<std::string>({"spine", "agg0", "agg1", "leaf0", "leaf1", "leaf2"}));
    assert_true(find(t, "leaf2")->ranks == ranks({4, 5}));  // h5's first in-network node
    assert_string_equal(find(t, "leaf0")->parent.c_str(), "agg0");
    assert_int_equal(find(t, "leaf0")->level, 2);
    assert_true(find(t, "agg0")->children == std::vector<std::string>({"leaf0", "leaf1"}));
    std::string why;
    assert_ptr_equal(tree_for_ranks(plan, all_ranks(f), &why), &t);
}

static void a_drained_parent_is_replaced_by_a_wired_node_nearer_the_root(void**) {
    auto f    = load(three_levels);
    auto plan = plan_trees(f, {{"agg0", "drained"}});
    // leaf0 is also wired to agg1 and takes it; leaf1 is wired to nothing else nearer the
    // root and becomes a root of its own.
    assert_int_equal(plan.trees.size(), 2);
    const aggregation_tree& main = plan.trees[0];
    assert_string_equal(main.root.c_str(), "leaf1");
    assert_true(main.ranks == ranks({2, 3}));
    const aggregation_tree& spine = plan.trees[1];
    assert_string_equal(spine.root.c_str(), "spine");
    assert_false(spine.as_declared);
    assert_string_equal(find(spine, "leaf0")->parent.c_str(), "agg1");
    assert_null(find(spine, "agg0"));
    assert_true(spine.ranks == ranks({0, 1, 4, 5}));
    std::string why;
    assert_null(tree_for_ranks(plan, all_ranks(f), &why));
    test::expect_has(why, "no one tree holds every rank");
    assert_ptr_equal(tree_for_ranks(plan, ranks({0, 4, 5}), &why), &spine);
}

static void a_rank_whose_in_network_nodes_are_out_is_cut_naming_the_node(void**) {
    auto f    = load(three_levels);
    auto plan = plan_trees(f, {{"leaf2", "down"}});
    assert_int_equal(plan.cut.size(), 1);
    assert_int_equal(plan.cut[0].rank, 4);
    assert_string_equal(plan.cut[0].because.c_str(), "leaf2 is down");
    // h5 is dual-homed: it moves to leaf1.
    assert_int_equal(plan.trees.size(), 1);
    assert_true(find(plan.trees[0], "leaf1")->ranks == ranks({2, 3, 5}));
    std::string why;
    assert_null(tree_for_ranks(plan, all_ranks(f), &why));
    test::expect_has(why, "rank 4 has no in-network path: leaf2 is down");
    assert_non_null(tree_for_ranks(plan, ranks({0, 1, 2, 3, 5}), &why));
}

static void without_the_root_each_child_roots_a_tree(void**) {
    auto f    = load(three_levels);
    auto plan = plan_trees(f, {{"spine", "down"}, {"nobody", "down"}});
    assert_int_equal(plan.trees.size(), 2);
    assert_string_equal(plan.trees[0].root.c_str(), "agg0");
    assert_string_equal(plan.trees[1].root.c_str(), "agg1");
    assert_true(plan.trees[0].ranks == ranks({0, 1, 2, 3}));
    assert_int_equal(plan.cut.size(), 0);
}

static void a_fabric_without_in_network_nodes_has_no_tree(void**) {
    auto f    = lattice("torus:2x2");
    auto plan = plan_trees(f, {});
    assert_int_equal(plan.in_network_nodes, 0);
    assert_int_equal(plan.trees.size(), 0);
    assert_int_equal(plan.cut.size(), 0);
    std::string why;
    assert_null(tree_for_ranks(plan, all_ranks(f), &why));
    test::expect_has(why, "no in-network node");
}

static void lattice_routes_are_dor_and_name_an_out_node(void**) {
    auto f = lattice("torus:4x4");
    for (auto ties : {routing::tie_rule::toward_plus, routing::tie_rule::source_parity}) {
        for (int src = 0; src < 16; ++src) {
            for (int dst = 0; dst < 16; ++dst) {
                auto hops =
                    routing::route_hops(*f.lattice(), src, dst, ties, routing::vc_policy::dateline);
                auto got = route_between(f, {}, "r" + std::to_string(src),
                                         "r" + std::to_string(dst), ties);
                assert_true(got.is_ok());
                assert_int_equal(got->steps.size(), hops.size());
                for (size_t k = 0; k < hops.size(); ++k) {
                    assert_string_equal(got->steps[k].to.c_str(),
                                        ("r" + std::to_string(hops[k].to)).c_str());
                    assert_int_equal(got->steps[k].port, hops[k].port);
                    assert_int_equal(got->steps[k].vc, hops[k].vc);
                }
                assert_int_equal(got->blocked.size(), 0);
            }
        }
    }
    // r0 -> r10 goes through r8 first (dimension 0, two hops +), then r9: with r8 out the
    // route is not bent around it, it is named.
    auto blocked =
        route_between(f, {{"r8", "drained"}}, "r0", "r10", routing::tie_rule::toward_plus);
    assert_true(blocked.is_ok());
    assert_int_equal(blocked->steps.size(), 4);
    assert_int_equal(blocked->blocked.size(), 1);
    assert_string_equal(blocked->blocked[0].c_str(), "r8 is drained");
    auto unknown = route_between(f, {}, "r0", "r99", routing::tie_rule::toward_plus);
    assert_false(unknown.is_ok());
    test::expect_has(unknown.error().message(), "no node 'r99'");
}

static void lattice_route_tables_are_fabric_routings(void**) {
    auto f = lattice("torus:4x4");
    for (int at = 0; at < 16; ++at) {
        auto want = routing::route_table::build(*f.lattice(), at, routing::tie_rule::toward_plus,
                                                routing::vc_policy::dateline);
        auto got  = route_table_of(f, {}, "r" + std::to_string(at), routing::tie_rule::toward_plus);
        assert_true(got.is_ok());
        assert_int_equal(got->size(), 16);
        for (int r = 0; r < 16; ++r) {
            const auto& e = want.to(r);
            assert_string_equal((*got)[r].next.c_str(),
                                e.next < 0 ? "" : ("r" + std::to_string(e.next)).c_str());
            assert_int_equal((*got)[r].port, e.port);
        }
    }
}

static void switch_routes_are_shortest_over_in_service_nodes_never_through_an_endpoint(void**) {
    auto f    = load(three_levels);
    auto ties = routing::tie_rule::toward_plus;
    auto r    = route_between(f, {}, "h0", "h4", ties);
    assert_true(r.is_ok());
    std::vector<std::string> path{"h0"};
    for (const route_step& s : r->steps) {
        path.push_back(s.to);
    }
    assert_true(path == std::vector<std::string>({"h0", "leaf0", "agg1", "leaf2", "h4"}));
    // Without agg1, leaf2 can be reached only through h5 (an endpoint wired to leaf1 and
    // leaf2), which is no way at all.
    auto none = route_between(f, {{"agg1", "down"}}, "h0", "h4", ties);
    assert_false(none.is_ok());
    test::expect_has(none.error().message(), "no way from h0 to h4");
    auto detour = route_between(f, {{"agg1", "down"}}, "h0", "h2", ties);
    assert_true(detour.is_ok());
    assert_int_equal(detour->steps.size(), 4);  // h0 leaf0 agg0 leaf1 h2
    auto out_end = route_between(f, {{"h4", "down"}}, "h0", "h4", ties);
    assert_true(out_end.is_ok());
    assert_int_equal(out_end->blocked.size(), 1);

    auto table = route_table_of(f, {{"agg1", "down"}}, "leaf0", ties);
    assert_true(table.is_ok());
    assert_string_equal((*table)[0].next.c_str(), "h0");
    assert_string_equal((*table)[2].next.c_str(), "agg0");
    assert_false((*table)[4].reachable);
}

LOOM_TEST_MAIN(
    "control_trees", cmocka_unit_test(in_service_the_declared_tree_comes_back_whole),
    cmocka_unit_test(a_drained_parent_is_replaced_by_a_wired_node_nearer_the_root),
    cmocka_unit_test(a_rank_whose_in_network_nodes_are_out_is_cut_naming_the_node),
    cmocka_unit_test(without_the_root_each_child_roots_a_tree),
    cmocka_unit_test(a_fabric_without_in_network_nodes_has_no_tree),
    cmocka_unit_test(lattice_routes_are_dor_and_name_an_out_node),
    cmocka_unit_test(lattice_route_tables_are_fabric_routings),
    cmocka_unit_test(switch_routes_are_shortest_over_in_service_nodes_never_through_an_endpoint))
