// SPDX-License-Identifier: Apache-2.0
// fabric/topology fabrics: the links a shape implies (with uniform α/BW), the fabric file
// (a full example, then one rejected file per check, each error naming the bad item), and
// load_fabric choosing between a shape and a file.
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "shape_of.hh"
#include "test_main.hh"
#include "topology/fabric.hh"

using namespace loom;
using test::replaced;

namespace {

topology::fabric shape_fabric(const char* text, const topology::link_params& p = {}) {
    auto f = topology::fabric_from_shape(*topology::shape::parse(text), p);
    if (!f) {
        fail_msg("%s: %s", text, f.error().to_string().c_str());
    }
    return *f;
}

// A 2x2 torus of endpoints wired directly, plus an aggregation switch under a spine and a
// DPU; "nvl" links take their class's α/BW, one overrides its BW.
const char* const good_file = R"({
  "format": "loom-fabric", "version": 1, "shape": "torus:2x2",
  "classes": {"nvl": {"alpha": 1e-6, "bw": 25e9}},
  "nodes": [
    {"id": "h0", "kind": "endpoint", "rank": 0, "coords": [0, 0]},
    {"id": "h1", "kind": "endpoint", "rank": 1, "coords": [0, 1]},
    {"id": "h2", "kind": "endpoint", "rank": 2},
    {"id": "h3", "kind": "endpoint", "rank": 3, "coords": [1, 1]},
    {"id": "leaf", "kind": "switch", "in_network": true, "parent": "spine"},
    {"id": "spine", "kind": "switch", "in_network": true},
    {"id": "dpu0", "kind": "dpu", "parent": "leaf"}
  ],
  "links": [
    {"a": "h0", "b": "h1", "class": "nvl"},
    {"a": "h2", "b": "h3", "class": "nvl", "bw": 50e9},
    {"a": "h0", "b": "h2", "class": "nvl"},
    {"a": "h1", "b": "h3", "class": "nvl"},
    {"a": "h0", "b": "leaf", "class": "eth", "alpha": 2e-6, "bw": 12.5e9},
    {"a": "leaf", "b": "spine", "class": "eth", "alpha": 2e-6, "bw": 12.5e9},
    {"a": "dpu0", "b": "leaf", "class": "eth", "alpha": 2e-6, "bw": 12.5e9}
  ]})";

}  // namespace

static void shape_fabrics_have_every_link_once(void**) {
    struct {
        const char* shape;
        size_t links;
    } cases[] = {{"ring:1", 0},       {"ring:2", 1},    {"ring:5", 5},    {"torus:4x4", 32},
                 {"torus:2x2x2", 12}, {"torus:3x1", 3}, {"mesh:3x4", 17}, {"mesh:1x1", 0},
                 {"fullmesh:5", 10},  {"star:5", 5}};
    for (const auto& c : cases) {
        auto f = shape_fabric(c.shape);
        assert_int_equal(f.links().size(), c.links);
        const auto& s = *f.lattice();
        for (int a = 0; a < s.size(); ++a) {
            for (int b = 0; b < s.size(); ++b) {
                // Directly wired exactly when one hop apart (a star goes through its switch).
                bool wired = f.link_between_ranks(a, b) >= 0;
                if (s.type() != topology::kind::star && wired != (s.hops(a, b) == 1)) {
                    LOOM_FAIL(std::string(c.shape) + ": ranks " + std::to_string(a) + ", " +
                              std::to_string(b) + " wired " + std::to_string(wired));
                }
            }
            assert_int_equal(f.nodes()[f.node_of_rank(a)].rank, a);
        }
    }
    auto star = shape_fabric("star:5");
    assert_int_equal(star.nodes().size(), 6);
    const int sw = star.find_node("switch");
    assert_int_equal(star.links_of(sw).size(), 5);
    assert_true(star.link_between(star.node_of_rank(3), sw) >= 0);
}

static void shape_fabrics_carry_the_given_alpha_and_bw(void**) {
    auto f = shape_fabric("torus:3x3", {"nvlink", 2e-6, 50e9});
    assert_int_equal(f.nranks(), 9);
    for (const auto& l : f.links()) {
        assert_string_equal(f.class_name(l).c_str(), "nvlink");
        assert_true(l.alpha_s == 2e-6 && l.bw_bytes_per_s == 50e9);
    }
    assert_true(f.nodes()[4].coords == (std::vector<int>{1, 1}));
    assert_string_equal(f.nodes()[4].id.c_str(), "r4");
    auto big = topology::fabric_from_shape(*topology::shape::parse("fullmesh:20000"));
    assert_false(big.is_ok());  // 2e8 links: refused with a reason, not allocated
}

static void fabric_file_is_read_in_full(void**) {
    auto f = test::ok_value(topology::parse_fabric_json(good_file, "good.json"));
    assert_int_equal(f.nranks(), 4);
    assert_int_equal(f.nodes().size(), 7);
    assert_true(f.lattice() && f.lattice()->to_string() == "torus:2x2");
    const auto& leaf = f.nodes()[f.find_node("leaf")];
    assert_true(leaf.kind == topology::node_kind::switch_node);
    assert_true(leaf.in_network);
    assert_int_equal(leaf.parent, f.find_node("spine"));
    assert_int_equal(f.nodes()[f.find_node("dpu0")].parent, f.find_node("leaf"));
    assert_int_equal(f.find_node("nope"), -1);
    const auto& l01 = f.links()[f.link_between_ranks(0, 1)];
    assert_true(l01.alpha_s == 1e-6 && l01.bw_bytes_per_s == 25e9);  // the class's
    const auto& l23 = f.links()[f.link_between_ranks(3, 2)];
    assert_true(l23.alpha_s == 1e-6 && l23.bw_bytes_per_s == 50e9);  // its own BW
    const auto& up = f.links()[f.link_between(f.find_node("leaf"), f.find_node("h0"))];
    assert_string_equal(f.class_name(up).c_str(), "eth");
    assert_true(up.alpha_s == 2e-6 && up.bw_bytes_per_s == 12.5e9);
    assert_int_equal(f.link_between_ranks(0, 3), -1);
    assert_int_equal(f.links_of(f.find_node("leaf")).size(), 3);
}

static void fabric_file_errors_name_the_bad_item(void**) {
    const std::string g  = good_file;
    const std::string h2 = R"({"id": "h2", "kind": "endpoint", "rank": 2})";
    const std::string l1 = R"({"a": "h0", "b": "h1", "class": "nvl"})";
    struct {
        std::string text;
        const char* message;
    } cases[] = {
        {"{\"format\": ", "not valid JSON"},
        {replaced(g, "loom-fabric", "loom-schedule"), "\"format\": \"loom-fabric\""},
        {replaced(g, "\"classes\"", "\"class_table\""), "unknown key \"class_table\""},
        {replaced(g, "\"rank\": 2}", "\"rank\": 2, \"colour\": 1}"),
         "node 2 ('h2'): unknown key \"colour\""},
        {replaced(g, l1, R"({"a": "h0", "b": "h9", "class": "nvl"})"),
         "link 0: \"b\" names unknown node 'h9'"},
        {replaced(g, "\"id\": \"h3\"", "\"id\": \"h1\""), "duplicate node id 'h1' (nodes 1 and 3)"},
        {replaced(g, "\"rank\": 3", "\"rank\": 4"),
         "rank 3 is missing: the 4 ranked nodes must carry ranks 0..3 (endpoint 'h3' has rank 4)"},
        {replaced(g, "\"rank\": 3", "\"rank\": 1"), "rank 1 is given twice: endpoint 'h1' and "},
        {replaced(g, h2, R"({"id": "h2", "kind": "endpoint"})"), "endpoint 'h2' has no rank"},
        {replaced(g, "\"id\": \"spine\", \"kind\": \"switch\"",
                  "\"id\": \"spine\", \"kind\": \"switch\", \"rank\": 4"),
         "switch 'spine' has a rank; switches carry none"},
        {replaced(g, "torus:2x2", "torus:4x4"),
         "shape torus:4x4 has 16 ranks but the fabric has 4 ranked nodes"},
        {replaced(g, "torus:2x2", "torus:2x"), "topology 'torus:2x'"},
        {replaced(g, "[0, 1]", "[1, 0]"),
         "endpoint 'h1': coordinates [1, 0] are not rank 1's [0, 1] in torus:2x2"},
        {replaced(g, "\"bw\": 50e9", "\"bw\": -1"), "link 1 (h2 - h3): bw must be"},
        {replaced(g, "\"alpha\": 1e-6, ", ""), "link 0 (h0 - h1): needs \"alpha\" and \"bw\""},
        {replaced(g, l1, R"({"a": "h0", "b": "h0", "class": "nvl"})"),
         "link 0 (h0 - h0): both ends are the same node"},
        {replaced(g, "\"parent\": \"leaf\"", "\"parent\": \"h0\""),
         "dpu 'dpu0': the parent must be a switch or a DPU"},
        {replaced(g, "\"in_network\": true}", "\"in_network\": true, \"parent\": \"dpu0\"}"),
         "its chain of parents has a cycle"},
        {replaced(g, h2, R"({"id": "h2", "kind": "endpoint", "rank": 2, "in_network": true})"),
         "endpoint 'h2': in_network and parent are for switches and DPUs"},
        {replaced(g, "\"kind\": \"dpu\"", "\"kind\": \"router\""), "unknown kind 'router'"},
        {R"({"format": "loom-fabric", "version": 1, "nodes": 3, "links": []})",
         "\"nodes\" must be an array"},
        {replaced(g, l1, R"({"a": "h0", "b": "h1", "class": ""})"), "\"class\" must be"},
    };
    for (const auto& c : cases) {
        auto f = topology::parse_fabric_json(c.text, "t.json");
        if (f.is_ok()) {
            LOOM_FAIL(std::string("accepted a file that should fail with: ") + c.message);
        }
        const std::string& msg = f.error().message();
        if (f.error().code() != LOOM_ERR_PARSE || msg.rfind("fabric file 't.json': ", 0) != 0 ||
            msg.find(c.message) == std::string::npos || msg.find('\n') != std::string::npos) {
            LOOM_FAIL("expected '" + std::string(c.message) + "', got: " + f.error().to_string());
        }
    }
}

static void load_fabric_takes_a_shape_or_a_file(void**) {
    auto s = topology::load_fabric("torus:2x3", {"link", 3e-6, 1e9});
    assert_true(s.is_ok() && s->nranks() == 6 && s->links()[0].alpha_s == 3e-6);
    auto bad = topology::load_fabric("torus:2x");
    assert_int_equal(bad.error().code(), LOOM_ERR_PARSE);
    auto missing = topology::load_fabric("/nonexistent/fabric.json");
    assert_false(missing.is_ok());
    assert_non_null(strstr(missing.error().message().c_str(), "cannot open fabric file"));
    char path[] = "/tmp/loom_fabric_XXXXXX.json";
    int fd      = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE* fp = fdopen(fd, "w");
    fputs(good_file, fp);
    fclose(fp);
    auto file = topology::load_fabric(path);
    remove(path);
    assert_int_equal(test::ok_value(std::move(file)).nranks(), 4);
}

LOOM_TEST_MAIN("topology_fabric", cmocka_unit_test(shape_fabrics_have_every_link_once),
               cmocka_unit_test(shape_fabrics_carry_the_given_alpha_and_bw),
               cmocka_unit_test(fabric_file_is_read_in_full),
               cmocka_unit_test(fabric_file_errors_name_the_bad_item),
               cmocka_unit_test(load_fabric_takes_a_shape_or_a_file))
