// SPDX-License-Identifier: Apache-2.0
// fabric/topology: parsing, row-major coordinates, neighbours, diameter, bisection.
#include <string>

#include "shape_of.hh"
#include "test_main.hh"
#include "topology/topology.hh"

using namespace loom;

static void parse_accepts_every_kind(void**) {
    for (const char* text :
         {"star:8", "ring:5", "torus:4x4x2", "mesh:3x5", "fullmesh:6", "torus:8x1x1"}) {
        assert_string_equal(test::ok_value(topology::shape::parse(text)).to_string().c_str(), text);
    }
    assert_int_equal(topology::shape::parse("torus:4x4x2")->size(), 32);
}

static void parse_rejects_bad_shapes_with_reason(void**) {
    for (const char* text : {"", "star", "star:0", "star:-3", "star:4x4", "cube:8", "torus:4x",
                             "torus:4xx2", "mesh:3x5x", "ring:abc", "torus:100000x100000"}) {
        test::expect_error(topology::shape::parse(text), LOOM_ERR_PARSE, "",
                           "'" + std::string(text) + "'");
    }
}

static void coordinates_are_row_major(void**) {
    auto s = *topology::shape::parse("torus:4x3x2");
    // Last dimension fastest: rank 1 is (0,0,1), rank 2 is (0,1,0), rank 6 is (1,0,0).
    assert_true(s.coords(1) == (std::vector<int>{0, 0, 1}));
    assert_true(s.coords(2) == (std::vector<int>{0, 1, 0}));
    assert_true(s.coords(6) == (std::vector<int>{1, 0, 0}));
    for (int r = 0; r < s.size(); ++r) {
        assert_int_equal(s.rank_of(s.coords(r)), r);
    }
}

static void neighbour_counts_follow_the_formulas(void**) {
    // Torus: sum of min(d_i - 1, 2) distinct neighbours; mesh corners fewer.
    assert_int_equal(topology::shape::parse("torus:4x4x4")->neighbours(0).size(), 6);
    assert_int_equal(topology::shape::parse("torus:2x2x2")->neighbours(0).size(), 3);
    assert_int_equal(topology::shape::parse("torus:3x1")->neighbours(0).size(), 2);
    assert_int_equal(topology::shape::parse("mesh:3x3")->neighbours(0).size(), 2);
    assert_int_equal(topology::shape::parse("mesh:3x3")->neighbours(4).size(), 4);
    assert_int_equal(topology::shape::parse("star:5")->neighbours(2).size(), 4);
}

static void diameter_and_hops(void**) {
    auto t = *topology::shape::parse("torus:4x4x2");
    assert_int_equal(t.diameter(), 2 + 2 + 1);
    auto m = *topology::shape::parse("mesh:3x5");
    assert_int_equal(m.diameter(), 2 + 4);
    assert_int_equal(m.hops(0, 14), 6);
    assert_int_equal(t.hops(0, t.rank_of({3, 3, 1})), 1 + 1 + 1);
    assert_int_equal(topology::shape::parse("star:9")->diameter(), 1);
    assert_int_equal(topology::shape::parse("star:1")->diameter(), 0);
}

static void bisection_counts_links(void**) {
    // 4x4 torus: cut the 4-rings of one dimension: 4 lines x 2 links.
    assert_int_equal(topology::shape::parse("torus:4x4")->bisection_links(), 8);
    // A 2-ring has one link (docs/references.md#a2a-bound-range).
    assert_int_equal(topology::shape::parse("torus:2x2x2")->bisection_links(), 4);
    assert_int_equal(topology::shape::parse("mesh:4x4")->bisection_links(), 4);
    assert_int_equal(topology::shape::parse("fullmesh:4")->bisection_links(), 4);
}

LOOM_TEST_MAIN("topology_shapes", cmocka_unit_test(parse_accepts_every_kind),
               cmocka_unit_test(parse_rejects_bad_shapes_with_reason),
               cmocka_unit_test(coordinates_are_row_major),
               cmocka_unit_test(neighbour_counts_follow_the_formulas),
               cmocka_unit_test(diameter_and_hops), cmocka_unit_test(bisection_counts_links))
