// SPDX-License-Identifier: Apache-2.0
// fabric/topology metrics checked against brute force: neighbour counts (torus
// Σ min(d_i − 1, 2), mesh boundary ranks fewer), diameter and hops against breadth-first
// search, bisection against every balanced cut of small shapes, per-dimension lines.
#include <algorithm>
#include <bit>
#include <string>

#include "shape_of.hh"
#include "test_main.hh"
#include "topology/census.hh"
#include "topology/fabric.hh"
#include "topology/lines.hh"

using namespace loom;
using loom::test::shape_of;

namespace {

// Hop distances from `src` by breadth-first search over neighbours().
std::vector<int> bfs(const topology::shape& s, int src) {
    std::vector<int> dist(s.size(), -1), queue{src};
    dist[src] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
        for (int q : s.neighbours(queue[head])) {
            if (dist[q] < 0) {
                dist[q] = dist[queue[head]] + 1;
                queue.push_back(q);
            }
        }
    }
    return dist;
}

const char* const lattices[] = {
    "ring:1",    "ring:2",      "ring:3",      "ring:8",      "torus:2x2",   "torus:3x3",
    "torus:4x4", "torus:2x3x4", "torus:5x1x3", "torus:8x1x1", "torus:2x2x2", "mesh:1x1",
    "mesh:2x2",  "mesh:3x3",    "mesh:4x5",    "mesh:2x3x4",  "mesh:7"};

}  // namespace

static void neighbour_counts_follow_the_formulas_everywhere(void**) {
    for (const char* text : lattices) {
        auto s = shape_of(text);
        for (int r = 0; r < s.size(); ++r) {
            auto c       = s.coords(r);
            size_t count = 0;
            for (int i = 0; i < s.ndims(); ++i) {
                const int d = s.dims()[i];
                count += s.wraps() ? std::min(d - 1, 2) : (c[i] > 0) + (c[i] < d - 1);
            }
            if (s.neighbours(r).size() != count) {
                LOOM_FAIL(std::string(text) + " rank " + std::to_string(r) + ": " +
                          std::to_string(s.neighbours(r).size()) + " neighbours, formula " +
                          std::to_string(count));
            }
        }
    }
    for (const char* text : {"star:6", "fullmesh:6"}) {
        assert_int_equal(shape_of(text).neighbours(3).size(), 5);
    }
}

static void census_counts_match_the_listing(void**) {
    std::vector<const char*> all(std::begin(lattices), std::end(lattices));
    all.insert(all.end(), {"star:1", "star:6", "fullmesh:6", "fullmesh:1"});
    for (const char* text : all) {
        auto s = shape_of(text);
        std::vector<int64_t> h;
        for (int r = 0; r < s.size(); ++r) {
            size_t k = s.neighbours(r).size();
            h.resize(std::max(h.size(), k + 1), 0);
            ++h[k];
        }
        if (topology::degree_histogram(s) != h) {
            LOOM_FAIL(std::string(text) + ": degree histogram differs from neighbours()");
        }
        auto f = topology::fabric_from_shape(s);
        assert_int_equal(topology::link_count(s), f->links().size());
    }
    // 16M ranks summarised without listing them.
    auto big = topology::degree_histogram(shape_of("mesh:256x256x256"));
    assert_int_equal(big.size(), 7);
    assert_int_equal(big[3], 8);  // the corners
    assert_int_equal(big[6], int64_t{254} * 254 * 254);
}

static void diameter_and_hops_match_breadth_first_search(void**) {
    for (const char* text : lattices) {
        auto s      = shape_of(text);
        int formula = 0, longest = 0;
        for (int d : s.dims()) {
            formula += s.wraps() ? d / 2 : d - 1;
        }
        for (int a = 0; a < s.size(); ++a) {
            auto dist = bfs(s, a);
            for (int b = 0; b < s.size(); ++b) {
                assert_int_equal(dist[b], s.hops(a, b));
                longest = std::max(longest, dist[b]);
            }
        }
        if (s.diameter() != longest || s.diameter() != formula) {
            LOOM_FAIL(std::string(text) + ": diameter " + std::to_string(s.diameter()) +
                      ", search " + std::to_string(longest) + ", formula " +
                      std::to_string(formula));
        }
    }
}

// The fewest links any split into halves of ⌊N/2⌋ and ⌈N/2⌉ ranks cuts (N <= 16).
static int64_t brute_bisection(const topology::shape& s) {
    auto f       = topology::fabric_from_shape(s);
    const int n  = s.size();
    int64_t best = -1;
    for (uint32_t side = 0; side < (1u << n); ++side) {
        if (std::popcount(side) != n / 2) {
            continue;
        }
        int64_t cut = 0;
        for (const auto& l : f->links()) {
            cut += ((side >> l.a) & 1) != ((side >> l.b) & 1);
        }
        best = best < 0 ? cut : std::min(best, cut);
    }
    return best;
}

static void bisection_is_the_smallest_balanced_cut(void**) {
    for (const char* text :
         {"ring:2",     "ring:4",        "ring:5",       "ring:6",    "ring:7",      "ring:8",
          "torus:2x2",  "torus:2x3",     "torus:2x5",    "torus:2x7", "torus:3x3",   "torus:3x5",
          "torus:4x4",  "torus:2x2x2",   "torus:2x4",    "torus:3x4", "torus:2x2x3", "torus:2x2x4",
          "torus:2x6",  "torus:2x2x2x2", "torus:4x1x3",  "mesh:2x2",  "mesh:2x3",    "mesh:2x5",
          "mesh:2x7",   "mesh:3x3",      "mesh:3x5",     "mesh:4x4",  "mesh:3x4",    "mesh:2x2x2",
          "mesh:2x2x3", "mesh:2x6",      "mesh:2x2x2x2", "mesh:5",    "mesh:8"}) {
        auto s = shape_of(text);
        if (s.bisection_links() != brute_bisection(s)) {
            LOOM_FAIL(std::string(text) + ": bisection_links " +
                      std::to_string(s.bisection_links()) + ", smallest balanced cut " +
                      std::to_string(brute_bisection(s)));
        }
    }
    // The texts' 2N/d_max (Lu-TM §3.6) where d_max is even; an odd dimension needs a step.
    assert_int_equal(shape_of("torus:8x8x4").bisection_links(), 2 * 256 / 8);
    assert_int_equal(shape_of("torus:3x3").bisection_links(), 6 + 2);
    assert_int_equal(shape_of("ring:1").bisection_links(), 0);
    assert_int_equal(shape_of("star:7").bisection_links(), 3);
    assert_int_equal(shape_of("fullmesh:5").bisection_links(), 6);
}

static void lines_share_every_coordinate_but_one(void**) {
    for (const char* text : {"torus:3x4x5", "mesh:2x3x4", "torus:2x1x3", "ring:6"}) {
        auto s = shape_of(text);
        for (int dim = 0; dim < s.ndims(); ++dim) {
            const int d = s.dims()[dim];
            auto lines  = topology::dim_lines(s, dim);
            assert_int_equal(lines.size(), s.size() / d);
            std::vector<int> seen(s.size(), 0);
            for (const auto& line : lines) {
                assert_int_equal(line.size(), d);
                for (int c = 0; c < d; ++c) {
                    auto rc = s.coords(line[c]), first = s.coords(line[0]);
                    assert_int_equal(rc[dim], c);  // coordinate order
                    rc[dim] = first[dim];
                    assert_true(rc == first);  // every other coordinate shared
                    assert_true(topology::dim_line(s, line[c], dim) == line);
                    if (c > 0) {
                        assert_int_equal(s.hops(line[c - 1], line[c]), 1);
                    }
                    ++seen[line[c]];
                }
            }
            // The lines of a dimension partition the ranks.
            assert_int_equal(std::ranges::count(seen, 1), s.size());
            assert_int_equal(topology::dim_closes(s, dim), s.wraps() && d >= 3);
        }
    }
    auto star = shape_of("star:4");
    assert_true(topology::dim_line(star, 2, 0) == (std::vector<int>{0, 1, 2, 3}));
}

LOOM_TEST_MAIN("topology_metrics",
               cmocka_unit_test(neighbour_counts_follow_the_formulas_everywhere),
               cmocka_unit_test(census_counts_match_the_listing),
               cmocka_unit_test(diameter_and_hops_match_breadth_first_search),
               cmocka_unit_test(bisection_is_the_smallest_balanced_cut),
               cmocka_unit_test(lines_share_every_coordinate_but_one))
