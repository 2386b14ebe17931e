// SPDX-License-Identifier: Apache-2.0
// Per-link α and BW (sim::on_fabric, fabric files): one slow link makes ring all-reduce
// exactly the closed form at the bottleneck's BW; a uniform fabric file gives bit for bit
// the time of the shape with the same α and BW; the shape a file's ranks form is inferred
// (coordinates, wraparound links, a switch, every pair, a ring) or refused with a reason.
#include "algorithms/hier_ring.hh"
#include "sim_test.hh"
#include "topology/fabric.hh"

using namespace loom;
using algorithms::port_model;
using schedule::collective;

namespace {

constexpr double alpha = 1.3e-6, bw = 7e9;  // sim_test.hh's generic values

topology::shape shape(const std::string& text) {
    return test::value_or_fail(topology::shape::parse(text));
}

// fabric_from_shape's fabric, edited: `edit` may change nodes and links; `keep_shape` false
// drops the "shape" so that on_fabric must infer it.
template <class Edit>
result<topology::fabric> edited(const std::string& text, Edit edit, bool keep_shape = true) {
    auto base = test::value_or_fail(topology::fabric_from_shape(shape(text), {"link", alpha, bw}));
    std::vector<topology::node> nodes = base.nodes();
    std::vector<topology::link> links = base.links();
    edit(nodes, links);
    std::optional<topology::shape> lattice;
    if (keep_shape) {
        lattice = shape(text);
    }
    return topology::fabric::make(std::move(nodes), std::move(links), base.classes(), lattice);
}

result<topology::fabric> uniform(const std::string& text, bool keep_shape = true) {
    return edited(
        text, [](auto&, auto&) {}, keep_shape);
}

sim::fabric on_or_fail(const result<topology::fabric>& f, port_model p = port_model::per_edge) {
    if (!f) {
        LOOM_FAIL(f.error().to_string());
    }
    sim::fabric base;
    base.ports = p;
    return test::value_or_fail(sim::on_fabric(*f, base));
}

// The link between the nodes of ranks a and b (either way round).
int link_of(const std::vector<topology::node>& nodes, const std::vector<topology::link>& links,
            int a, int b) {
    for (size_t i = 0; i < links.size(); ++i) {
        int ra = nodes[links[i].a].rank, rb = nodes[links[i].b].rank;
        if ((ra == a && rb == b) || (ra == b && rb == a)) {
            return static_cast<int>(i);
        }
    }
    LOOM_FAIL("no link between ranks " + std::to_string(a) + " and " + std::to_string(b));
    return -1;
}

// The link of rank r to the star's switch.
int port_of(const std::vector<topology::node>& nodes, const std::vector<topology::link>& links,
            int r) {
    for (size_t i = 0; i < links.size(); ++i) {
        if (nodes[links[i].a].rank == r || nodes[links[i].b].rank == r) {
            return static_cast<int>(i);
        }
    }
    LOOM_FAIL("rank " + std::to_string(r) + " has no link");
    return -1;
}

// 2(N-1)α + 2(N-1)/N·M/BW at the bottleneck's BW.
double ring_allreduce_form(int n, double m, double bottleneck_bw) {
    return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * m / bottleneck_bw;
}

void expect_time(const sim::report& r, double want, const std::string& what) {
    if (!test::close_to(r.time_s, want)) {
        LOOM_FAIL(what + ": simulated " + test::fmt(r.time_s) +
                  " s, closed form at the "
                  "bottleneck " +
                  test::fmt(want) + " s");
    }
}

status error_of(const result<topology::fabric>& f, port_model p = port_model::per_edge) {
    if (!f) {
        return f.error();
    }
    sim::fabric base;
    base.ports = p;
    auto out   = sim::on_fabric(*f, base, "test.json");
    return out ? status::ok() : out.error();
}

void expect_error(const status& st, const std::string& words) {
    if (st.is_ok()) {
        LOOM_FAIL("accepted; expected an error with '" + words + "'");
    }
    loom::test::expect_has(st.message(), words);
}

}  // namespace

// One link of a ring at half BW: every one of the 2(N-1) steps of ring all-reduce crosses
// it in turn (each receive waits for the one before), so the time is the closed form with
// the slow link's BW everywhere — exactly, wherever the slow link is.
static void one_slow_ring_link_gives_the_bottleneck_closed_form(void**) {
    const auto& ring = test::find_algorithm(collective::allreduce, "ring");
    for (int n : {3, 4, 5, 8, 9}) {
        for (int slow : {0, 1, n - 1}) {
            auto f = on_or_fail(edited("ring:" + std::to_string(n), [&](auto& nodes, auto& links) {
                links[link_of(nodes, links, slow, (slow + 1) % n)].bw_bytes_per_s = bw / 2;
            }));
            assert_true(f.bw_bytes_per_s == bw / 2 && f.alpha_s == alpha);  // the slowest link
            auto c = test::make_call(collective::allreduce, shape("ring:" + std::to_string(n)),
                                     int64_t{n} * 6000);
            auto r = test::simulate_call(ring, c, f);
            expect_time(r, ring_allreduce_form(n, r.payload_bytes, bw / 2),
                        test::describe_call(ring, c) + " slow link " + std::to_string(slow));
            // n_alpha and n_beta are counted in the slowest link's units: the closed form's.
            assert_true(test::close_to(r.n_alpha, 2.0 * (n - 1)));
            assert_true(test::close_to(r.n_beta, 2.0 * (n - 1) / n));
        }
    }
}

// On a star: a slow switch port makes the pairs through it slow, under both port models.
static void one_slow_star_port_gives_the_bottleneck_closed_form(void**) {
    const auto& ring = test::find_algorithm(collective::allreduce, "ring");
    for (port_model p : {port_model::per_edge, port_model::single_port}) {
        for (int n : {4, 7, 8}) {
            auto f = on_or_fail(edited("star:" + std::to_string(n),
                                       [&](auto& nodes, auto& links) {
                                           links[port_of(nodes, links, 2)].bw_bytes_per_s = bw / 2;
                                       }),
                                p);
            auto c = test::make_call(collective::allreduce, n, int64_t{n} * 6000);
            auto r = test::simulate_call(ring, c, f);
            expect_time(r, ring_allreduce_form(n, r.payload_bytes, bw / 2),
                        test::describe_call(ring, c) + " " + test::ports_name(f));
        }
    }
}

// A fabric file whose links all have the same α and BW simulates exactly (==, not close)
// like the shape with that α and BW: the per-link table costs no arithmetic of its own.
static void a_uniform_fabric_file_equals_the_shape_exactly(void**) {
    struct run {
        collective coll;
        const char* algo;
        const char* topo;
        port_model ports;
    };
    const run runs[] = {
        {collective::allreduce, "ring", "star:8", port_model::per_edge},
        {collective::allreduce, "ring", "star:8", port_model::single_port},
        {collective::allreduce, "rabenseifner", "star:8", port_model::single_port},
        {collective::allreduce, "ring", "ring:8", port_model::per_edge},
        {collective::allreduce, "dims", "torus:4x4", port_model::per_edge},
        {collective::allreduce, "dims", "mesh:3x4", port_model::per_edge},
        {collective::alltoall, "pairwise", "torus:2x3", port_model::per_edge},
        {collective::alltoall, "pairwise", "fullmesh:6", port_model::per_edge},
        {collective::broadcast, "binomial", "star:5", port_model::single_port},
    };
    for (const run& x : runs) {
        const auto& a = test::find_algorithm(x.coll, x.algo);
        auto s        = shape(x.topo);
        auto c        = test::make_call(x.coll, s, int64_t{s.size()} * 600);
        sim::fabric plain;
        plain.alpha_s        = alpha;
        plain.bw_bytes_per_s = bw;
        plain.ports          = x.ports;
        auto file            = on_or_fail(uniform(x.topo), x.ports);
        auto inferred        = on_or_fail(uniform(x.topo, false), x.ports);
        auto r0              = test::simulate_call(a, c, plain);
        for (const sim::fabric* f : {&file, &inferred}) {
            auto r = test::simulate_call(a, c, *f);
            if (r.time_s != r0.time_s || r.n_alpha != r0.n_alpha || r.n_beta != r0.n_beta) {
                LOOM_FAIL(test::describe_call(a, c) + " " + test::ports_name(plain) +
                          ": fabric file " + test::fmt(r.time_s) + " s, shape " +
                          test::fmt(r0.time_s) + " s");
            }
        }
    }
}

// Without "shape": coordinates (wraparound links decide torus or mesh), a switch linked to
// every rank (star), every pair linked (full mesh), links r to r+1 (ring).
static void the_shape_of_a_file_is_inferred(void**) {
    for (const char* text :
         {"torus:3x3", "mesh:3x3", "mesh:2x5", "torus:4x2x3", "ring:6", "star:5", "fullmesh:5"}) {
        auto f = test::value_or_fail(uniform(text, false));
        auto s = sim::shape_of(f);
        if (!s) {
            LOOM_FAIL(std::string(text) + ": " + s.error().to_string());
        }
        assert_string_equal(s->to_string().c_str(), text);
    }
    // A ring without coordinates.
    auto ring = edited(
        "ring:5",
        [](auto& nodes, auto&) {
            for (auto& n : nodes)
                n.coords.clear();
        },
        false);
    assert_string_equal(sim::shape_of(*ring).value().to_string().c_str(), "ring:5");
    // Dimensions of 2 or less have no wraparound of their own: a torus.
    assert_string_equal(sim::shape_of(*uniform("mesh:2x2", false)).value().to_string().c_str(),
                        "torus:2x2");
}

static void fabrics_the_simulator_cannot_route_are_refused(void**) {
    // A lattice link missing (the file names its shape).
    expect_error(error_of(edited("torus:3x3",
                                 [](auto& nodes, auto& links) {
                                     links.erase(links.begin() + link_of(nodes, links, 4, 5));
                                 })),
                 "needs a link between ranks 4 and 5 (nodes 'r4' and 'r5')");
    // A link the shape does not have.
    expect_error(error_of(edited("mesh:3x3",
                                 [](auto&, auto& links) {
                                     links.push_back({0, 8, 0, alpha, bw});
                                 })),
                 "ranks 0 and 8 (nodes 'r0' and 'r8'), which are not neighbours on mesh:3x3");
    // Some dimensions wrap and others do not.
    expect_error(error_of(edited(
                     "mesh:3x4",
                     [](auto&, auto& links) {
                         for (int row = 0; row < 3; ++row) {  // wrap dimension 1 only
                             links.push_back({row * 4, row * 4 + 3, 0, alpha, bw});
                         }
                     },
                     false)),
                 "some dimensions of 3x4 have wraparound links and others not");
    // Coordinates not in row-major order.
    expect_error(
        error_of(edited(
            "mesh:2x3", [](auto& nodes, auto&) { std::swap(nodes[0].coords, nodes[1].coords); },
            false)),
        "rank 0's coordinates are not its row-major place in 2x3");
    // No coordinates, and the links are no known shape: a path 0-1-2-3.
    expect_error(error_of(edited(
                     "ring:4",
                     [](auto& nodes, auto& links) {
                         for (auto& n : nodes) {
                             n.coords.clear();
                         }
                         links.erase(links.begin() + link_of(nodes, links, 3, 0));
                     },
                     false)),
                 "cannot tell which shape the fabric's 4 ranks form");
    // A star rank without a switch port; the file's path is named.
    auto star = edited("star:4", [](auto& nodes, auto& links) {
        links.erase(links.begin() + port_of(nodes, links, 3));
    });
    expect_error(error_of(star),
                 "fabric file 'test.json': star:4 needs a switch linked to every "
                 "rank; rank 3 (node 'r3') has no link to");
    // A full-mesh file under single-port: it has no switch ports to share.
    auto mesh        = on_or_fail(uniform("fullmesh:4"));
    mesh.ports       = port_model::single_port;
    const auto& ring = test::find_algorithm(collective::allreduce, "ring");
    auto r =
        sim::simulate(ring, test::make_call(collective::allreduce, shape("fullmesh:4"), 400), mesh);
    assert_false(r.is_ok());
    expect_error(r.error(), "per-edge only");
    // Per-link costs for another shape than the call's.
    auto other = on_or_fail(uniform("ring:4"));
    r          = sim::simulate(ring, test::make_call(collective::allreduce, 4, 400), other);
    assert_false(r.is_ok());
    expect_error(r.error(), "the per-link costs are for ring:4, the topology is star:4");
}

// hier-ring on torus:KxG with two link classes, rows (inside a group) fast and columns
// (between groups) slow: each phase runs on one class, so the simulated time is Ring-Tree's
// two-level form 2[(G-1)α_in + (G-1)/G·M/BW_in] + 2(K-1)α_out + 2(K-1)/K·(M/G)/BW_out
// (algorithms::hier_ring_time_s, docs/references.md#hierarchical-ring).
static void hier_ring_on_two_link_classes_is_the_two_level_form(void**) {
    const auto& hier = test::find_algorithm(collective::allreduce, "hier-ring");
    algorithms::two_level_links l;
    l.alpha_intra_s = alpha / 5, l.bw_intra_bytes_per_s = bw * 6;
    l.alpha_inter_s = alpha, l.bw_inter_bytes_per_s = bw;
    for (auto [k, g] : {std::pair{4, 4}, std::pair{3, 5}, std::pair{8, 8}, std::pair{2, 6}}) {
        std::string text = "torus:" + std::to_string(k) + "x" + std::to_string(g);
        auto f           = on_or_fail(edited(text, [&](auto& nodes, auto& links) {
            for (auto& ln : links) {
                bool row          = nodes[ln.a].rank / g == nodes[ln.b].rank / g;
                ln.alpha_s        = row ? l.alpha_intra_s : l.alpha_inter_s;
                ln.bw_bytes_per_s = row ? l.bw_intra_bytes_per_s : l.bw_inter_bytes_per_s;
            }
        }));
        auto c = test::make_call(collective::allreduce, shape(text), int64_t{k} * g * 600);
        auto r = test::simulate_call(hier, c, f);
        expect_time(r, algorithms::hier_ring_time_s(k, g, r.payload_bytes, l),
                    test::describe_call(hier, c) + " rows fast, columns slow");
    }
}

LOOM_TEST_MAIN("fabric_sim_fabric_links",
               cmocka_unit_test(one_slow_ring_link_gives_the_bottleneck_closed_form),
               cmocka_unit_test(one_slow_star_port_gives_the_bottleneck_closed_form),
               cmocka_unit_test(a_uniform_fabric_file_equals_the_shape_exactly),
               cmocka_unit_test(the_shape_of_a_file_is_inferred),
               cmocka_unit_test(fabrics_the_simulator_cannot_route_are_refused),
               cmocka_unit_test(hier_ring_on_two_link_classes_is_the_two_level_form))
