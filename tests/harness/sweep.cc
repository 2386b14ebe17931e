// SPDX-License-Identifier: Apache-2.0
#include "sweep.hh"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "test_main.hh"

namespace loom::test {

std::string describe_call(const algorithms::algorithm& a, const algorithms::call& c) {
    return std::string(schedule::collective_name(c.coll)) + " " + std::string(a.name) +
           " N=" + std::to_string(c.nranks) + " count=" + std::to_string(c.count) +
           " root=" + std::to_string(c.root) + " topo=" + c.topo.to_string() +
           " P=" + std::to_string(c.segments);
}

const algorithms::algorithm& find_algorithm(schedule::collective coll, std::string_view name) {
    const auto* a = algorithms::find(coll, name);
    if (!a) {
        LOOM_FAIL(std::string(schedule::collective_name(coll)) + " " + std::string(name) +
                  " is not registered");
    }
    return *a;
}

algorithms::call make_call(schedule::collective coll, const topology::shape& topo, int64_t count,
                           int root, int segments) {
    return {.coll     = coll,
            .nranks   = topo.size(),
            .count    = count,
            .root     = root,
            .segments = segments,
            .topo     = topo};
}

algorithms::call make_call(schedule::collective coll, int nranks, int64_t count, int root,
                           int segments) {
    return make_call(coll, topology::shape::star(nranks), count, root, segments);
}

bool same_bytes(double counted, double stated) {
    return std::fabs(counted - stated) <= 1e-9 * std::max(1.0, std::fabs(stated));
}

std::string verify_call(const algorithms::algorithm& a, const algorithms::call& c,
                        schedule::schedule_stats* stats) {
    if (status st = algorithms::check_call(a, c); !st) {
        if (st.code() == LOOM_ERR_NOT_APPLICABLE) {
            return "n/a";
        }
        return describe_call(a, c) + ": " + st.to_string();
    }
    auto s = algorithms::generate(a, c);
    if (!s) {
        return describe_call(a, c) + ": generate: " + s.error().to_string();
    }
    auto report = schedule::verify(*s);
    if (!report.result) {
        return describe_call(a, c) + ": " + report.result.to_string();
    }
    if (stats) {
        *stats = report.stats;
    }
    return "";
}

schedule::schedule_stats expect_verifies(const algorithms::algorithm& a,
                                         const algorithms::call& c) {
    schedule::schedule_stats st;
    auto err = verify_call(a, c, &st);
    if (!err.empty()) {
        LOOM_FAIL(err);
    }
    return st;
}

schedule::schedule generate_ok(const algorithms::algorithm& a, const algorithms::call& c) {
    auto s = algorithms::generate(a, c);
    if (!s) {
        LOOM_FAIL(describe_call(a, c) + ": generate: " + s.error().to_string());
    }
    return std::move(s).value();
}

std::vector<schedule::step> sends_of(const schedule::rank_schedule& rs) {
    std::vector<schedule::step> sends;
    std::copy_if(rs.steps.begin(), rs.steps.end(), std::back_inserter(sends),
                 [](const schedule::step& s) { return s.kind == schedule::step_kind::send; });
    return sends;
}

uint64_t pair_key(int from, int to) {
    return (static_cast<uint64_t>(from) << 32) | static_cast<uint32_t>(to);
}

schedule::schedule_stats verify_pairs(const algorithms::algorithm& a, const algorithms::call& c) {
    schedule::verify_options opt;
    opt.pair_bytes = true;
    auto report    = schedule::verify(generate_ok(a, c), opt);
    if (!report.result) {
        LOOM_FAIL(describe_call(a, c) + " " + routing::tie_rule_name(c.ties).data() + ": " +
                  report.result.to_string());
    }
    return report.stats;
}

schedule::schedule_stats expect_counts_equal_stated(const algorithms::algorithm& a,
                                                    const algorithms::call& c, double m) {
    auto st     = expect_verifies(a, c);
    auto edge   = a.predict(algorithms::query_for(c, m, algorithms::port_model::per_edge));
    auto single = a.predict(algorithms::query_for(c, m, algorithms::port_model::single_port));
    if (st.rounds != edge.n_alpha || !same_bytes(st.edge_bytes, edge.n_beta * m) ||
        st.rounds != single.n_alpha || !same_bytes(st.port_bytes, single.n_beta * m)) {
        LOOM_FAIL(describe_call(a, c) + ": counted " + std::to_string(st.rounds) + " rounds, " +
                  std::to_string(st.edge_bytes) + " B per-edge, " + std::to_string(st.port_bytes) +
                  " B single-port; stated " + std::to_string(edge.n_alpha) + ", " +
                  std::to_string(single.n_alpha) + " rounds, " + std::to_string(edge.n_beta * m) +
                  ", " + std::to_string(single.n_beta * m) + " B");
    }
    return st;
}

algorithms::cost_query cost_query_at(schedule::collective coll, int nranks, double bytes) {
    return {.coll = coll, .nranks = nranks, .bytes = bytes};
}

void expect_stated_cost(const algorithms::algorithm& a, int nranks, double n_alpha, double n_beta) {
    auto cost = a.predict(cost_query_at(a.primitive, nranks));
    if (cost.n_alpha != n_alpha || std::fabs(cost.n_beta - n_beta) > 1e-12) {
        LOOM_FAIL(std::string(a.name) + " N=" + std::to_string(nranks) + ": stated " +
                  std::to_string(cost.n_alpha) + "α + " + std::to_string(cost.n_beta) +
                  "·M/BW, expected " + std::to_string(n_alpha) + "α + " + std::to_string(n_beta) +
                  "·M/BW");
    }
}

void expect_verifies_with_channels(const algorithms::algorithm& a) {
    for (int n : {2, 3, 4, 6, 8, 12}) {
        for (int channels : {2, 3}) {
            auto c     = make_call(a.primitive, n, 1001);
            c.channels = channels;
            auto err   = verify_call(a, c);
            if (!err.empty()) {
                LOOM_FAIL(err + " channels=" + std::to_string(channels));
            }
        }
    }
}

sweep_result sweep(const algorithms::algorithm& a, const std::vector<int>& ranks, int64_t big,
                   const std::vector<std::string>& lattices) {
    sweep_result res;
    // The sweep_calls_per_shape calls on one shape: every count with every root.
    auto sweep_shape = [&](const topology::shape& shape) {
        int n = shape.size();
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n}, big}) {
            for (int root : {0, n - 1, n / 2}) {
                auto c        = make_call(a.primitive, shape, count, root);
                c.peer        = (root + 1) % n;
                std::string r = verify_call(a, c);
                if (r.empty()) {
                    ++res.verified;
                } else if (r == "n/a") {
                    ++res.not_applicable;
                } else if (res.first_failure.empty()) {
                    res.first_failure = r;
                }
            }
        }
    };
    for (int n : ranks) {
        sweep_shape(topology::shape::star(n));
    }
    for (const auto& text : lattices) {
        sweep_shape(*topology::shape::parse(text));
    }
    return res;
}

void expect_clean_sweep(const algorithms::algorithm& a, const std::vector<std::string>& lattices,
                        applies where, int min_verified) {
    auto ranks = standard_ranks();
    auto res   = sweep(a, ranks, 1000003, lattices);
    if (!res.first_failure.empty()) {
        LOOM_FAIL(res.first_failure);
    }
    if (where == applies::everywhere) {
        assert_int_equal(res.not_applicable, 0);
        assert_true(res.verified > min_verified);
        return;
    }
    assert_int_equal(res.not_applicable, sweep_calls_per_shape * static_cast<int>(ranks.size()));
    assert_int_equal(res.verified, sweep_calls_per_shape * static_cast<int>(lattices.size()));
}

std::vector<int> standard_ranks() {
    return ranks_up_to(17, {24, 32, 64});
}

std::vector<int> ranks_up_to(int last, const std::vector<int>& more) {
    std::vector<int> r(static_cast<size_t>(std::max(last, 0)));
    std::iota(r.begin(), r.end(), 1);
    r.insert(r.end(), more.begin(), more.end());
    return r;
}

std::vector<std::string> standard_lattices() {
    return {"torus:2x2",   "torus:3x3",   "torus:4x4", "torus:2x2x2", "torus:3x3x3",
            "torus:4x4x2", "torus:8x1x1", "torus:5x3", "torus:1x7",   "torus:3x4x5",
            "mesh:2x2",    "mesh:3x3",    "mesh:4x4",  "mesh:2x2x2",  "mesh:3x3x3",
            "mesh:4x4x2",  "mesh:8x1x1",  "mesh:5x3",  "mesh:1x7",    "mesh:3x4x5"};
}

}  // namespace loom::test
