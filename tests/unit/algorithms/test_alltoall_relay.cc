// SPDX-License-Identifier: Apache-2.0
// Relay all-to-all (ring-relay, dor-relay) and the dimension-ordered routes under them.
//  - routing: routes are dimension-ordered shortest paths with the docs/references.md#dor-ties tie
//  rules; the
//    per-rank transit lists and the per-dimension link counts agree with brute force over
//    every route; the counts reproduce docs/references.md#ring-relay-load,
//    docs/references.md#dor-ties, docs/references.md#a2a-bound-range,
//    docs/references.md#cubic-torus-a2a;
//  - ring-relay: verified over the sweep; rounds/bytes equal ⌊N/2⌋α + L/N·M/BW exactly
//    (both port models); the busiest link carries N(N+2)/8 (even) or (N²-1)/8 (odd) chunks;
//  - dor-relay: verified on every lattice, not applicable on star/full mesh, neighbour
//    sends only, the Lu-TM §3.6 4×4 link counts, docs/references.md#a2a-bound-range's 2×2 and
//    2×2×2, the verifier's rounds and busiest link against predict()'s asynchronous form on
//    every lattice (1 and 3 segments), segments split every chunk into its own messages.
#include <algorithm>
#include <map>
#include <ranges>
#include <tuple>

#include "shape_of.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;

using routing::tie_rule;
using test::axis_of_move;
using test::shape_of;

static const tie_rule both_ties[] = {tie_rule::toward_plus, tie_rule::source_parity};

static const algorithms::algorithm* relay(const char* name) {
    return &test::find_algorithm(schedule::collective::alltoall, name);
}

static algorithms::call alltoall_call(const topology::shape& topo, int64_t count,
                                      tie_rule ties = tie_rule::toward_plus) {
    auto c = test::make_call(schedule::collective::alltoall, topo, count);
    c.ties = ties;
    return c;
}

static int64_t busiest_pair(const schedule::schedule_stats& st) {
    auto values = std::views::values(st.pair_bytes);
    return values.empty() ? 0 : std::ranges::max(values);
}

// Shapes small enough for brute force over every route.
static const char* const small_shapes[] = {
    "ring:1",      "ring:2",   "ring:5",     "ring:6",   "torus:4x4", "torus:3x2x4", "torus:6x2",
    "torus:2x2x2", "mesh:3x4", "mesh:2x2x3", "mesh:1x5", "star:4",    "fullmesh:3"};

// ---- routing ------------------------------------------------------------------------

static void routes_are_dimension_ordered_shortest_paths(void**) {
    for (const char* text : {"ring:7", "ring:8", "torus:4x4", "torus:3x4x5", "torus:2x2x2",
                             "torus:6x2", "mesh:3x5", "mesh:2x3x4"}) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            for (int a = 0; a < s.size(); ++a) {
                for (int b = 0; b < s.size(); ++b) {
                    auto r = routing::route(s, a, b, ties);
                    assert_int_equal(r.front(), a);
                    assert_int_equal(r.back(), b);
                    assert_int_equal(static_cast<int>(r.size()) - 1, s.hops(a, b));
                    int last_axis = 0;
                    for (size_t k = 1; k < r.size(); ++k) {
                        assert_int_equal(s.hops(r[k - 1], r[k]), 1);
                        int axis = axis_of_move(s, r[k - 1], r[k]);
                        assert_true(axis >= last_axis);  // dimension 0 first
                        last_axis = axis;
                    }
                }
            }
        }
    }
}

static void route_ties_follow_a10_and_mesh_never_wraps(void**) {
    auto ring4 = shape_of("ring:4");
    using v    = std::vector<int>;
    assert_true(routing::route(ring4, 0, 2, tie_rule::toward_plus) == (v{0, 1, 2}));
    assert_true(routing::route(ring4, 1, 3, tie_rule::toward_plus) == (v{1, 2, 3}));
    assert_true(routing::route(ring4, 0, 2, tie_rule::source_parity) == (v{0, 1, 2}));
    assert_true(routing::route(ring4, 1, 3, tie_rule::source_parity) == (v{1, 0, 3}));
    assert_true(routing::route(ring4, 3, 0, tie_rule::toward_plus) == (v{3, 0}));  // wrap
    auto mesh4 = shape_of("mesh:4");
    assert_true(routing::route(mesh4, 3, 0, tie_rule::toward_plus) == (v{3, 2, 1, 0}));
    // torus 4x4, rank 10 = (2, 2): dimension 0 first (0 → 4 → 8), then dimension 1.
    auto t44 = shape_of("torus:4x4");
    assert_true(routing::route(t44, 0, 10, tie_rule::toward_plus) == (v{0, 4, 8, 9, 10}));
    assert_true(routing::route(t44, 5, 15, tie_rule::source_parity) == (v{5, 1, 13, 12, 15}));
    assert_true(routing::route(shape_of("star:5"), 1, 3, tie_rule::toward_plus) == (v{1, 3}));
}

// transits_through(r) lists exactly the chunks whose route visits r, with the right hop,
// predecessor and successor.
static void transits_match_every_route(void**) {
    for (const char* text : small_shapes) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            using row = std::tuple<int, int, int, int, int, int>;
            std::vector<std::vector<row>> expect(s.size());
            for (int a = 0; a < s.size(); ++a) {
                for (int b = 0; b < s.size(); ++b) {
                    if (a == b) {
                        continue;
                    }
                    auto r = routing::route(s, a, b, ties);
                    for (size_t k = 0; k < r.size(); ++k) {
                        int prev = k > 0 ? r[k - 1] : -1, next = k + 1 < r.size() ? r[k + 1] : -1;
                        expect[r[k]].push_back({a, b, static_cast<int>(r.size()) - 1,
                                                static_cast<int>(k), prev, next});
                    }
                }
            }
            for (int at = 0; at < s.size(); ++at) {
                std::vector<row> got;
                for (const auto& t : routing::transits_through(s, at, ties)) {
                    got.push_back({t.src, t.dst, t.length, t.hop, t.prev, t.next});
                }
                std::sort(got.begin(), got.end());
                std::sort(expect[at].begin(), expect[at].end());
                if (got != expect[at]) {
                    LOOM_FAIL(std::string(text) + ": transits through rank " + std::to_string(at) +
                              " differ from the routes");
                }
            }
        }
    }
}

// count_all_to_all's per-dimension count equals counting every hop of every route.
static void link_loads_match_every_route(void**) {
    for (const char* text : small_shapes) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            std::map<std::pair<int, int>, int64_t> link;
            std::map<std::tuple<int, int, int>, int64_t> link_round;
            int longest = 0;
            for (int a = 0; a < s.size(); ++a) {
                for (int b = 0; b < s.size(); ++b) {
                    auto r  = routing::route(s, a, b, ties);
                    longest = std::max(longest, static_cast<int>(r.size()) - 1);
                    for (size_t k = 1; k < r.size(); ++k) {
                        ++link[{r[k - 1], r[k]}];
                        ++link_round[{static_cast<int>(k), r[k - 1], r[k]}];
                    }
                }
            }
            auto loads      = std::views::values(link);  // none on ring:1
            int64_t busiest = loads.empty() ? 0 : std::ranges::max(loads), wave = 0;
            std::map<int, int64_t> per_round;
            for (const auto& [key, n] : link_round) {
                per_round[std::get<0>(key)] = std::max(per_round[std::get<0>(key)], n);
            }
            for (const auto& [t, n] : per_round) {
                wave += n;
            }
            auto load = routing::count_all_to_all(s, ties);
            if (load.busiest_link != busiest || load.wave != wave || load.rounds != longest) {
                LOOM_FAIL(std::string(text) + " " + routing::tie_rule_name(ties).data() +
                          ": counted L=" + std::to_string(load.busiest_link) + " W=" +
                          std::to_string(load.wave) + " rounds=" + std::to_string(load.rounds) +
                          ", routes give " + std::to_string(busiest) + ", " + std::to_string(wave) +
                          ", " + std::to_string(longest));
            }
        }
    }
}

static int64_t busiest(const char* text, tie_rule ties) {
    return routing::count_all_to_all(shape_of(text), ties).busiest_link;
}

// Busiest-link chunks (L) = fraction of M times N. docs/references.md#ring-relay-load (ring),
// docs/references.md#dor-ties (4×4), docs/references.md#a2a-bound-range (2×2, 2×2×2, 3×3, 5×5, 6×6,
// mesh 3×5), docs/references.md#cubic-torus-a2a (4×4×4, 16×16×16), Lu-TM §3.6 (8×8: d_max/8 = 1).
static void link_loads_reproduce_errata(void**) {
    for (int n = 1; n <= 64; ++n) {
        int64_t d = n / 2;
        assert_int_equal(busiest(("ring:" + std::to_string(n)).c_str(), tie_rule::toward_plus),
                         d * (d + 1) / 2);
        if (n >= 2) {
            assert_int_equal(d * (d + 1) / 2 * 8, n % 2 == 0 ? n * (n + 2) : n * n - 1);
        }
    }
    const auto par = tie_rule::source_parity, plus = tie_rule::toward_plus;
    assert_int_equal(busiest("torus:4x4", par), 8);    // M/2 (Lu-TM §3.6)
    assert_int_equal(busiest("torus:4x4", plus), 12);  // 3/4·M (docs/references.md#dor-ties)
    assert_int_equal(busiest("torus:2x2", par),
                     2);  // M/2, not M/4 (docs/references.md#a2a-bound-range)
    assert_int_equal(busiest("torus:2x2x2", plus), 4);  // M/2 (docs/references.md#a2a-bound-range)
    assert_int_equal(busiest("torus:3x3", par), 3);     // M/3 (docs/references.md#a2a-bound-range)
    assert_int_equal(busiest("torus:5x5", par), 15);  // 3/5·M (docs/references.md#a2a-bound-range)
    assert_int_equal(busiest("torus:6x6", par), 30);  // 5/6·M (docs/references.md#a2a-bound-range)
    assert_int_equal(busiest("torus:8x8", par), 64);  // d_max/8 = 1
    assert_int_equal(busiest("torus:4x4x4", par), 32);  // 1/2 (docs/references.md#cubic-torus-a2a)
    assert_int_equal(busiest("mesh:3x5", par), 18);  // 6/5·M (docs/references.md#a2a-bound-range)
    assert_int_equal(busiest("mesh:4x4", par), 16);  // d_max/4 = 1
    assert_int_equal(busiest("torus:16x16x16", par),
                     2 * 4096);  // d_max/8 = 2 (docs/references.md#cubic-torus-a2a)
    assert_int_equal(busiest("mesh:16x16x16", par), 4 * 4096);  // d_max/4 = 4
}

// ---- ring-relay -----------------------------------------------------------------------

static void ring_relay_verifies_over_sweep(void**) {
    test::expect_clean_sweep(*relay("ring-relay"), test::standard_lattices(),
                             test::applies::everywhere, 500);
}

static void ring_relay_counts_equal_closed_form(void**) {
    const auto* a = relay("ring-relay");
    for (int n : test::standard_ranks()) {
        for (int64_t count : {int64_t{1}, int64_t{64}}) {
            auto c   = alltoall_call(topology::shape::star(n), count);
            double m = static_cast<double>(n) * count * c.dtype_size;
            test::expect_counts_equal_stated(*a, c, m);
            for (auto ports :
                 {algorithms::port_model::per_edge, algorithms::port_model::single_port}) {
                assert_true(a->predict(algorithms::query_for(c, m, ports)).exact);
            }
        }
    }
}

// docs/references.md#ring-relay-load: the busiest directed link carries N(N+2)/8 chunks (N even) or
// (N²-1)/8 (odd), and every transfer is between ring neighbours.
static void ring_relay_busiest_link_is_errata_a08(void**) {
    const int64_t count = 5;
    for (int n : test::standard_ranks()) {
        auto st        = test::verify_pairs(*relay("ring-relay"),
                                            alltoall_call(topology::shape::star(n), count));
        int64_t chunks = n % 2 == 0 ? int64_t{n} * (n + 2) / 8 : (int64_t{n} * n - 1) / 8;
        assert_int_equal(busiest_pair(st), chunks * count * 4);
        for (const auto& [key, bytes] : st.pair_bytes) {
            int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xffffffffu);
            assert_true((a + 1) % n == b || (b + 1) % n == a);
        }
    }
}

// Lu-CA §7.1 at N = 4: 3/4·M/BW (loom: 2 rounds, the text's 3 steps send the two chunks of
// the + link in separate steps); docs/references.md#ring-relay-load: N = 8 carries 10 chunks (10/8,
// not 7/8), N = 5 three.
static void ring_relay_text_numbers(void**) {
    const auto* a = relay("ring-relay");
    auto q        = test::cost_query_at(schedule::collective::alltoall, 1);
    for (auto [n, alpha, beta] :
         {std::tuple{4, 2.0, 0.75}, std::tuple{8, 4.0, 10.0 / 8}, std::tuple{5, 2.0, 3.0 / 5},
          std::tuple{2, 1.0, 0.5}, std::tuple{1, 0.0, 0.0}}) {
        q.nranks  = n;
        auto cost = a->predict(q);
        assert_true(cost.n_alpha == alpha);
        assert_true(cost.n_beta == beta);
    }
}

// ---- dor-relay ------------------------------------------------------------------------

static void dor_relay_verifies_on_every_lattice_and_only_there(void**) {
    // star:N is n/a, the lattices verify.
    auto lattices = test::standard_lattices();
    test::expect_clean_sweep(*relay("dor-relay"), lattices, test::applies::lattices_only);
    // The same lattices under the parity tie rule.
    for (const auto& text : lattices) {
        auto s = shape_of(text);
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{s.size() - 1}, int64_t{1000003}}) {
            auto err = test::verify_call(*relay("dor-relay"),
                                         alltoall_call(s, count, tie_rule::source_parity));
            if (!err.empty()) {
                LOOM_FAIL(err + " (source-parity)");
            }
        }
    }
}

static void dor_relay_not_applicable_on_star_and_fullmesh(void**) {
    for (const char* text : {"star:6", "fullmesh:6"}) {
        auto st = algorithms::check_call(*relay("dor-relay"), alltoall_call(shape_of(text), 4));
        assert_int_equal(st.code(), LOOM_ERR_NOT_APPLICABLE);
        assert_true(st.message().find("nothing to relay") != std::string::npos);
    }
}

static void dor_relay_sends_only_to_neighbours(void**) {
    auto shapes = test::standard_lattices();
    shapes.insert(shapes.end(), {"ring:7", "ring:8", "torus:6x2"});
    for (const auto& text : shapes) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            auto sched = test::generate_ok(*relay("dor-relay"), alltoall_call(s, 3, ties));
            int sends  = 0;
            for (const auto& rs : sched.ranks) {
                for (const auto& step : test::sends_of(rs)) {
                    ++sends;
                    if (s.hops(rs.rank, step.peer) != 1) {
                        LOOM_FAIL(text + ": rank " + std::to_string(rs.rank) + " sends to " +
                                  std::to_string(step.peer));
                    }
                }
            }
            assert_true(s.size() == 1 || sends > 0);
        }
    }
}

// Lu-TM §3.6 / docs/references.md#dor-ties: under source_parity every one of the 64 directed links
// of the 4×4 torus carries 8 chunks (M/2); under toward_plus the link from rank 1 to rank 2
// carries 12.
static void dor_relay_4x4_torus_link_counts(void**) {
    auto s              = shape_of("torus:4x4");
    const int64_t count = 7, chunk = count * 4;
    auto st =
        test::verify_pairs(*relay("dor-relay"), alltoall_call(s, count, tie_rule::source_parity));
    assert_int_equal(st.pair_bytes.size(), 64);
    for (const auto& [key, bytes] : st.pair_bytes) {
        assert_int_equal(bytes, 8 * chunk);
    }
    auto plus =
        test::verify_pairs(*relay("dor-relay"), alltoall_call(s, count, tie_rule::toward_plus));
    assert_int_equal(plus.pair_bytes.at(test::pair_key(1, 2)), 12 * chunk);
    assert_int_equal(busiest_pair(plus), 12 * chunk);
}

// docs/references.md#a2a-bound-range: on 2×2 and 2×2×2 the busiest link carries M/2 (the pair of a
// dimension of size 2 shares one link), stated by predict() and counted by the verifier.
static void dor_relay_2x2_and_2x2x2_carry_half_m(void**) {
    const auto* a = relay("dor-relay");
    for (const char* text : {"torus:2x2", "torus:2x2x2"}) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            auto c   = alltoall_call(s, 16, ties);
            double m = static_cast<double>(s.size()) * 16 * 4;
            auto st  = test::verify_pairs(*a, c);
            assert_true(routing::count_all_to_all(s, ties).busiest_link * 2 == s.size());
            assert_true(busiest_pair(st) == m / 2);
        }
    }
}

// On every lattice: the verifier's rounds are predict()'s n_alpha (the diameter: a segment's
// k-th hop waits only for its (k-1)-th); predict()'s n_beta·M is the busiest link's L chunks,
// stated as the asynchronous model (not exact); the busiest directed link carries exactly L
// chunks, never more than W.
static void dor_relay_counts_match_prediction(void**) {
    const auto* a = relay("dor-relay");
    auto shapes   = test::standard_lattices();
    for (int n = 1; n <= 9; ++n) {
        shapes.push_back("ring:" + std::to_string(n));
    }
    shapes.insert(shapes.end(), {"ring:16", "torus:6x6", "torus:8x2", "mesh:6x2"});
    int at_bound = 0, above_bound = 0;
    for (const auto& text : shapes) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            for (int segments : {1, 3}) {
                auto c     = alltoall_call(s, 8, ties);
                c.segments = segments;
                double m   = static_cast<double>(s.size()) * 8 * 4;
                auto st    = test::verify_pairs(*a, c);
                auto cost =
                    a->predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
                auto load    = routing::count_all_to_all(s, ties);
                double chunk = 8 * 4;
                bool ok = st.rounds == cost.n_alpha && st.rounds == s.diameter() && !cost.exact &&
                          busiest_pair(st) == load.busiest_link * chunk &&
                          test::same_bytes(load.busiest_link * chunk, cost.n_beta * m) &&
                          load.busiest_link <= load.wave;
                if (!ok) {
                    LOOM_FAIL(text + " " + routing::tie_rule_name(ties).data() + " P=" +
                              std::to_string(segments) + ": counted " + std::to_string(st.rounds) +
                              " rounds, " + std::to_string(st.edge_bytes) +
                              " B per-edge, busiest link " + std::to_string(busiest_pair(st)) +
                              " B; stated " + std::to_string(cost.n_alpha) + ", " +
                              std::to_string(cost.n_beta * m) + " (" + cost.note + ")");
                }
                (load.wave == load.busiest_link ? at_bound : above_bound)++;
            }
        }
    }
    // Both cases occur: shapes where the lockstep count reaches the routing bound, and where not.
    assert_true(at_bound > 0 && above_bound > 0);
}

// dor-relay on ring:N under toward_plus states ring-relay's closed form (the busiest link's
// L = ⌊N/2⌋(⌊N/2⌋+1)/2 chunks, ⌊N/2⌋ hops), as the asynchronous model rather than an exact form:
// its segments do not wait for rounds, so a run can beat ring-relay's lockstep waves.
static void dor_relay_on_a_ring_states_ring_relay_form(void**) {
    for (int n = 1; n <= 33; ++n) {
        auto q   = test::cost_query_at(schedule::collective::alltoall, n);
        q.topo   = shape_of("ring:" + std::to_string(n));
        auto dor = relay("dor-relay")->predict(q), ring = relay("ring-relay")->predict(q);
        assert_true(ring.exact && !dor.exact);
        assert_true(dor.n_alpha == ring.n_alpha);
        assert_true(dor.n_beta == ring.n_beta);
    }
}

// Segments: every segment of every chunk crosses each link of its route as its own message,
// so the verifier sees P times the messages, the same bytes per link, and it still verifies
// for counts P does not divide (segments are capped at one element).
static void dor_relay_segments_split_every_chunk(void**) {
    for (const char* text : {"torus:4x4", "mesh:3x5", "torus:3x4x5", "ring:6"}) {
        auto s = shape_of(text);
        for (tie_rule ties : both_ties) {
            for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{12}}) {
                auto one      = alltoall_call(s, count, ties);
                auto four     = one;
                four.segments = 4;
                auto a        = test::verify_pairs(*relay("dor-relay"), one);
                auto b        = test::verify_pairs(*relay("dor-relay"), four);
                auto sends    = [&](const algorithms::call& c) {
                    int64_t k = 0;
                    for (const auto& rs : test::generate_ok(*relay("dor-relay"), c).ranks) {
                        k += static_cast<int64_t>(test::sends_of(rs).size());
                    }
                    return k;
                };
                assert_true(a.pair_bytes == b.pair_bytes);
                assert_int_equal(sends(four), sends(one) * std::min<int64_t>(4, count));
            }
        }
    }
}

LOOM_TEST_MAIN("alltoall_relay", cmocka_unit_test(routes_are_dimension_ordered_shortest_paths),
               cmocka_unit_test(route_ties_follow_a10_and_mesh_never_wraps),
               cmocka_unit_test(transits_match_every_route),
               cmocka_unit_test(link_loads_match_every_route),
               cmocka_unit_test(link_loads_reproduce_errata),
               cmocka_unit_test(ring_relay_verifies_over_sweep),
               cmocka_unit_test(ring_relay_counts_equal_closed_form),
               cmocka_unit_test(ring_relay_busiest_link_is_errata_a08),
               cmocka_unit_test(ring_relay_text_numbers),
               cmocka_unit_test(dor_relay_verifies_on_every_lattice_and_only_there),
               cmocka_unit_test(dor_relay_not_applicable_on_star_and_fullmesh),
               cmocka_unit_test(dor_relay_sends_only_to_neighbours),
               cmocka_unit_test(dor_relay_4x4_torus_link_counts),
               cmocka_unit_test(dor_relay_2x2_and_2x2x2_carry_half_m),
               cmocka_unit_test(dor_relay_counts_match_prediction),
               cmocka_unit_test(dor_relay_on_a_ring_states_ring_relay_form),
               cmocka_unit_test(dor_relay_segments_split_every_chunk))
