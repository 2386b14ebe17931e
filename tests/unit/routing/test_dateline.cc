// SPDX-License-Identifier: Apache-2.0
// fabric/routing dateline VCs and the channel-dependency (deadlock) check: route_hops
// follows route() and switches to VC1 exactly after the wraparound; with VCs the graph is
// acyclic on every shape tried, both tie rules; without them a ring whose arcs reach two
// hops in one direction has a cycle, which the check returns (and this test prints).
#include <cstdlib>
#include <cstring>
#include <string>

#include "routing/channel_graph.hh"
#include "shape_of.hh"
#include "test_main.hh"

using namespace loom;
using loom::test::shape_of;
using routing::tie_rule;
using routing::vc_policy;

namespace {

constexpr tie_rule both_ties[] = {tie_rule::toward_plus, tie_rule::source_parity};

const char* const vc_shapes[] = {"ring:3",      "ring:4",      "ring:5",    "ring:6",
                                 "ring:7",      "ring:8",      "torus:3x3", "torus:4x4",
                                 "torus:2x2x2", "torus:3x4x5", "torus:5x5", "mesh:3x3",
                                 "mesh:4x4",    "torus:2x6",   "star:5",    "fullmesh:4"};

std::string where(const char* shape, tie_rule t, int src, int dst) {
    return std::string(shape) + " " + std::string(routing::tie_rule_name(t)) + " " +
           std::to_string(src) + "->" + std::to_string(dst);
}

// The VC each hop should have, from coordinates alone: 1 from the hop that goes n-1 → 0
// (or 0 → n-1) on a wrapping dimension of size >= 3 to the end of that dimension.
std::vector<int> expected_vcs(const topology::shape& s, const std::vector<int>& ranks) {
    std::vector<int> vcs;
    int dim = -1, vc = 0;
    for (size_t k = 1; k < ranks.size(); ++k) {
        auto a = s.coords(ranks[k - 1]), b = s.coords(ranks[k]);
        int i = 0;
        while (s.is_lattice() && a[i] == b[i]) {
            ++i;
        }
        const int n     = s.dims()[i];
        const bool wrap = s.wraps() && n >= 3 && std::abs(a[i] - b[i]) == n - 1;
        vc              = wrap ? 1 : (i == dim ? vc : 0);
        dim             = i;
        vcs.push_back(s.is_lattice() ? vc : 0);
    }
    return vcs;
}

}  // namespace

static void route_hops_follow_route_and_switch_after_the_dateline(void**) {
    for (const char* text : vc_shapes) {
        auto s = shape_of(text);
        for (tie_rule t : both_ties) {
            for (int src = 0; src < s.size(); ++src) {
                for (int dst = 0; dst < s.size(); ++dst) {
                    auto ranks = routing::route(s, src, dst, t);
                    auto hops  = routing::route_hops(s, src, dst, t, vc_policy::dateline);
                    auto flat  = routing::route_hops(s, src, dst, t, vc_policy::none);
                    auto vcs   = expected_vcs(s, ranks);
                    assert_int_equal(hops.size(), ranks.size() - 1);
                    for (size_t k = 0; k < hops.size(); ++k) {
                        const auto& h = hops[k];
                        if (h.from != ranks[k] || h.to != ranks[k + 1] || h.vc != vcs[k] ||
                            flat[k].vc != 0) {
                            LOOM_FAIL(where(text, t, src, dst) + ": hop " + std::to_string(k));
                        }
                        if (s.is_lattice()) {
                            assert_int_equal(s.neighbour(h.from, h.dim, h.step), h.to);
                            assert_int_equal(h.port, routing::port_of(s, h.dim, h.step));
                        }
                    }
                }
            }
        }
    }
    // ring:8, ties +: 6 → 1 goes 6, 7, 0, 1: VC0 up to 7, VC1 from the wrap 7 → 0 on.
    auto hops =
        routing::route_hops(shape_of("ring:8"), 6, 1, tie_rule::toward_plus, vc_policy::dateline);
    assert_int_equal(hops.size(), 3);
    assert_true(hops[0].vc == 0 && hops[1].vc == 1 && hops[2].vc == 1);
    assert_int_equal(routing::vc_count(shape_of("torus:2x2x2"), vc_policy::dateline), 1);
    assert_int_equal(routing::vc_count(shape_of("torus:2x3"), vc_policy::dateline), 2);
    assert_int_equal(routing::vc_count(shape_of("mesh:4x4"), vc_policy::dateline), 1);
}

// Every consecutive pair of the cycle (last → first too) is taken back to back by a route.
static void check_cycle_is_real(const topology::shape& s, tie_rule t, vc_policy p,
                                const std::vector<routing::channel>& cycle) {
    assert_true(cycle.size() >= 2);
    for (size_t k = 0; k < cycle.size(); ++k) {
        const auto& c = cycle[k];
        const auto& d = cycle[(k + 1) % cycle.size()];
        assert_int_equal(c.to, d.from);
        bool induced = false;
        for (int src = 0; src < s.size() && !induced; ++src) {
            for (int dst = 0; dst < s.size() && !induced; ++dst) {
                auto hops = routing::route_hops(s, src, dst, t, p);
                for (size_t h = 1; h < hops.size(); ++h) {
                    induced =
                        induced ||
                        (routing::channel{hops[h - 1].from, hops[h - 1].to, hops[h - 1].vc} == c &&
                         routing::channel{hops[h].from, hops[h].to, hops[h].vc} == d);
                }
            }
        }
        if (!induced) {
            LOOM_FAIL("no route takes " + routing::channel_name(s, c) + " then " +
                      routing::channel_name(s, d));
        }
    }
}

static void dateline_vcs_leave_no_dependency_cycle(void**) {
    for (const char* text : vc_shapes) {
        auto s = shape_of(text);
        for (tie_rule t : both_ties) {
            auto r = test::ok_value(routing::check_channel_dependencies(s, t, vc_policy::dateline));
            if (!r.acyclic) {
                LOOM_FAIL(where(text, t, 0, 0) + ": " + routing::describe_cycle(s, r.cycle));
            }
            assert_true(r.channels > 0);
        }
    }
}

static void without_vcs_rings_of_two_hop_arcs_have_a_cycle(void**) {
    struct {
        const char* shape;
        tie_rule ties;
        bool acyclic;
    } cases[] = {
        // Arcs of one hop chain nothing: ring:3 and a 3x3 torus need no VCs.
        {"ring:3", tie_rule::toward_plus, true},
        {"torus:3x3", tie_rule::source_parity, true},
        // ring:4: ties toward + make 2-hop arcs + from every rank (a cycle); source parity
        // sends them + from even and − from odd ranks, which never closes the ring.
        {"ring:4", tie_rule::toward_plus, false},
        {"ring:4", tie_rule::source_parity, true},
        {"ring:5", tie_rule::toward_plus, false},
        {"ring:5", tie_rule::source_parity, false},
        {"ring:6", tie_rule::source_parity, false},
        {"ring:8", tie_rule::toward_plus, false},
        {"torus:4x4", tie_rule::toward_plus, false},
        {"torus:5x5", tie_rule::source_parity, false},
        {"torus:3x4x5", tie_rule::source_parity, false},
        {"mesh:4x4", tie_rule::toward_plus, true},
        {"torus:2x2x2", tie_rule::toward_plus, true},
    };
    for (const auto& c : cases) {
        auto s = shape_of(c.shape);
        auto r = routing::check_channel_dependencies(s, c.ties, vc_policy::none);
        assert_true(r.is_ok());
        if (r->acyclic != c.acyclic) {
            LOOM_FAIL(where(c.shape, c.ties, 0, 0) + ": acyclic " + std::to_string(r->acyclic));
        }
        if (!r->acyclic) {
            check_cycle_is_real(s, c.ties, vc_policy::none, r->cycle);
            print_message("# %s %s, no VCs: %s\n", c.shape, routing::tie_rule_name(c.ties).data(),
                          routing::describe_cycle(s, r->cycle).c_str());
        }
    }
    auto r = routing::check_channel_dependencies(shape_of("ring:5"), tie_rule::toward_plus,
                                                 vc_policy::none);
    const std::string text = routing::describe_cycle(shape_of("ring:5"), r->cycle);
    assert_non_null(strstr(text.c_str(), " vc0 => "));
    assert_non_null(strstr(text.c_str(), "=> back to "));
}

static void oversized_shapes_are_refused(void**) {
    auto r = routing::check_channel_dependencies(shape_of("torus:64x64x64"), tie_rule::toward_plus,
                                                 vc_policy::dateline);
    assert_false(r.is_ok());
    assert_int_equal(r.error().code(), LOOM_ERR_NOT_SUPPORTED);
    auto huge = routing::check_channel_dependencies(shape_of("ring:16777216"),
                                                    tie_rule::toward_plus, vc_policy::none);
    assert_false(huge.is_ok());  // N²·diameter beyond int64: refused, not overflowed
}

LOOM_TEST_MAIN("routing_dateline",
               cmocka_unit_test(route_hops_follow_route_and_switch_after_the_dateline),
               cmocka_unit_test(dateline_vcs_leave_no_dependency_cycle),
               cmocka_unit_test(without_vcs_rings_of_two_hop_arcs_have_a_cycle),
               cmocka_unit_test(oversized_shapes_are_refused))
