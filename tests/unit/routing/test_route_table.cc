// SPDX-License-Identifier: Apache-2.0
// fabric/routing route tables: walking the per-router tables hop by hop (next, port, VC
// rule applied to how the chunk arrived) reproduces route() and route_hops() for every pair,
// on several shapes, both tie rules, with and without dateline VCs.
#include <string>

#include "routing/route_table.hh"
#include "shape_of.hh"
#include "test_main.hh"

using namespace loom;
using loom::test::shape_of;
using routing::tie_rule;
using routing::vc_policy;

namespace {

const char* const table_shapes[] = {"ring:1",    "ring:2",    "ring:5",      "ring:6",
                                    "torus:4x4", "torus:2x3", "torus:3x4x5", "torus:2x2x2",
                                    "mesh:3x4",  "mesh:5",    "star:5",      "fullmesh:4"};

}  // namespace

static void walking_the_tables_reproduces_every_route(void**) {
    for (const char* text : table_shapes) {
        auto s = shape_of(text);
        for (tie_rule t : {tie_rule::toward_plus, tie_rule::source_parity}) {
            for (vc_policy p : {vc_policy::dateline, vc_policy::none}) {
                auto tables = routing::build_route_tables(s, t, p);
                assert_int_equal(tables.size(), s.size());
                for (int src = 0; src < s.size(); ++src) {
                    for (int dst = 0; dst < s.size(); ++dst) {
                        auto want = routing::route_hops(s, src, dst, t, p);
                        std::vector<int> ranks{src};
                        int at = src, dim = -1, vc = 0;
                        for (size_t k = 0; at != dst; ++k) {
                            const auto& e = tables[at].to(dst);
                            vc            = routing::out_vc(e.vc, dim, vc, e.dim);
                            dim           = e.dim;
                            if (k >= want.size() || e.next != want[k].to ||
                                e.port != want[k].port || vc != want[k].vc) {
                                LOOM_FAIL(std::string(text) + " " +
                                          std::string(routing::tie_rule_name(t)) + " " +
                                          std::string(routing::vc_policy_name(p)) + " " +
                                          std::to_string(src) + "->" + std::to_string(dst) +
                                          ": table differs at hop " + std::to_string(k));
                            }
                            at = e.next;
                            ranks.push_back(at);
                        }
                        assert_true(ranks == routing::route(s, src, dst, t));
                        assert_int_equal(tables[dst].to(dst).next, -1);
                    }
                }
            }
        }
    }
}

static void entries_say_port_and_vc_rule(void**) {
    // ring:8, ties +: router 7 reaches 0..3 over the wraparound (VC1); 4, 5, 6 going − and
    // nothing else crosses there. Router 0 wraps going − to 7, 6, 5.
    auto ring = shape_of("ring:8");
    auto r7   = routing::route_table::build(ring, 7, tie_rule::toward_plus, vc_policy::dateline);
    auto r0   = routing::route_table::build(ring, 0, tie_rule::toward_plus, vc_policy::dateline);
    for (int dst = 0; dst < 8; ++dst) {
        assert_int_equal(r7.to(dst).vc == routing::vc_rule::vc1, dst <= 3);
        assert_int_equal(r0.to(dst).vc == routing::vc_rule::vc1, dst >= 5);
        if (dst != 7) {
            assert_int_equal(r7.to(dst).port, dst <= 3 ? 0 : 1);
            assert_true(r7.to(dst).vc != routing::vc_rule::vc0);  // keep or vc1: VCs in use
        }
    }
    auto mesh = routing::route_table::build(shape_of("mesh:4x4"), 5, tie_rule::toward_plus,
                                            vc_policy::dateline);
    auto flat = routing::route_table::build(ring, 7, tie_rule::toward_plus, vc_policy::none);
    for (const auto* table : {&mesh, &flat}) {  // no wraparound, or no VCs asked for
        for (const auto& e : table->entries()) {
            assert_true(e.vc == routing::vc_rule::vc0);
        }
    }
    auto star = routing::route_table::build(shape_of("star:4"), 2, tie_rule::toward_plus,
                                            vc_policy::dateline);
    assert_true(star.to(0).next == 0 && star.to(0).port == 0 && star.to(3).port == 0);
    auto full = routing::route_table::build(shape_of("fullmesh:4"), 2, tie_rule::toward_plus,
                                            vc_policy::dateline);
    // One port per peer, in neighbours() order: peers 0, 1, 3 → ports 0, 1, 2.
    assert_true(full.to(0).port == 0 && full.to(1).port == 1 && full.to(3).port == 2);
    assert_int_equal(full.router(), 2);
    assert_int_equal(full.entries().size(), 4);
}

LOOM_TEST_MAIN("routing_route_table", cmocka_unit_test(walking_the_tables_reproduces_every_route),
               cmocka_unit_test(entries_say_port_and_vc_rule))
