// SPDX-License-Identifier: Apache-2.0
// The entry points of sim.hh: check the fabric, feed the engine rank by rank, run, report.
#include <algorithm>
#include <cmath>

#include "base/check.hh"
#include "engine.hh"
#include "schedule/verifier.hh"

namespace loom::sim {

std::string_view gate_name(gate g) {
    switch (g) {
        case gate::none:
            return "start";
        case gate::own:
            return "own";
        case gate::partner:
            return "partner";
        case gate::link:
            return "link";
        case gate::slot:
            return "slot";
    }
    return "?";
}

namespace {

// What link_table::init and path() rely on: costs for this shape, a port per star rank, a
// pair per full-mesh pair (a lattice's neighbour pairs are checked as its links are made).
status check_per_link(const fabric& f, const link_costs& c) {
    if (c.shape.to_string() != f.topo.to_string()) {
        return invalid_argument("the per-link costs are for " + c.shape.to_string() +
                                ", the topology is " + f.topo.to_string());
    }
    const int64_t n = f.topo.size();
    if (f.topo.type() == topology::kind::star && static_cast<int64_t>(c.port.size()) != n) {
        return invalid_argument("the per-link costs of " + f.topo.to_string() + " give " +
                                std::to_string(c.port.size()) + " switch ports for " +
                                std::to_string(n) + " ranks");
    }
    if (f.topo.type() == topology::kind::full_mesh) {
        if (f.ports == algorithms::port_model::single_port) {
            return invalid_argument(
                "a full mesh with per-link costs is per-edge only: single-port models one port "
                "per rank into a switch, and a full-mesh fabric has none");
        }
        if (static_cast<int64_t>(c.pair.size()) != n * (n - 1) / 2) {
            return invalid_argument("the per-link costs of " + f.topo.to_string() + " give " +
                                    std::to_string(c.pair.size()) + " of its " +
                                    std::to_string(n * (n - 1) / 2) + " links");
        }
    }
    auto bad = [](const link_costs::cost& x) {
        return !std::isfinite(x.alpha_s) || x.alpha_s < 0 || !std::isfinite(x.bw_bytes_per_s) ||
               x.bw_bytes_per_s <= 0;
    };
    bool any_bad =
        std::any_of(c.port.begin(), c.port.end(), bad) ||
        std::any_of(c.pair.begin(), c.pair.end(), [&](const auto& p) { return bad(p.second); });
    if (any_bad) {
        return invalid_argument("per-link α must be finite and ≥ 0, BW positive and finite");
    }
    return status::ok();
}

}  // namespace

status check_fabric(const fabric& f, int nranks) {
    auto finite_nonneg = [](double x) { return std::isfinite(x) && x >= 0; };
    if (!finite_nonneg(f.alpha_s)) {
        return invalid_argument("α must be finite and not negative");
    }
    if (!std::isfinite(f.bw_bytes_per_s) || f.bw_bytes_per_s <= 0) {
        return invalid_argument("bandwidth must be positive and finite");
    }
    if (!std::isfinite(f.efficiency) || f.efficiency <= 0 || f.efficiency > 1) {
        return invalid_argument("efficiency must be in (0, 1], got " +
                                std::to_string(f.efficiency));
    }
    if (!finite_nonneg(f.alu_latency_s)) {
        return invalid_argument("ALU latency must be finite and not negative");
    }
    if (!finite_nonneg(f.gamma_s_per_byte)) {
        return invalid_argument("γ must be finite and not negative");
    }
    if (!std::isfinite(f.alpha_switch_s)) {
        return invalid_argument(
            "α_switch must be finite (negative: unset, the aggregation "
            "node's hops cost α)");
    }
    if (f.topo.size() != nranks) {
        return invalid_argument("topology " + f.topo.to_string() + " has " +
                                std::to_string(f.topo.size()) + " ranks, the schedule " +
                                std::to_string(nranks));
    }
    if (f.per_link) {
        return check_per_link(f, *f.per_link);
    }
    return status::ok();
}

namespace {

result<report> finish(detail::engine& e) {
    LOOM_CHECK(e.run());
    return e.make_report();
}

}  // namespace

result<report> simulate(const schedule::schedule& s, const fabric& f, const options& o) {
    if (s.info.nranks < 1 || static_cast<int>(s.ranks.size()) != s.info.nranks) {
        return invalid_argument("the schedule lists " + std::to_string(s.ranks.size()) +
                                " ranks for " + std::to_string(s.info.nranks));
    }
    LOOM_CHECK(check_fabric(f, s.info.nranks));
    if (o.verify_first) {
        schedule::verify_options vo;
        vo.check_values = false;
        vo.check_races  = false;
        if (auto v = schedule::verify(s, vo); !v.result) {
            return v.result;
        }
    }
    detail::engine e(f, s.info, o);
    LOOM_CHECK(e.init());
    for (const auto& rs : s.ranks) {
        LOOM_CHECK(e.add_rank(rs));
    }
    return finish(e);
}

result<report> simulate(const algorithms::algorithm& a, const algorithms::call& c, const fabric& f,
                        const options& o) {
    LOOM_CHECK(algorithms::check_call(a, c));
    fabric fc = f;
    fc.topo   = c.topo;
    fc.ties   = c.ties;
    LOOM_CHECK(check_fabric(fc, c.nranks));
    schedule::schedule_info info = algorithms::schedule_info_for(a, c);
    detail::engine e(fc, info, o);
    LOOM_CHECK(e.init());
    // One rank at a time: its steps are compiled and the generator's copy dropped, so the
    // whole schedule never exists at once. With one channel, generate_rank() is the
    // algorithm's build() into a fresh list; building into one reused list instead saves
    // the allocator handing back (and the kernel zeroing) a megabyte per rank.
    schedule::rank_schedule reused;
    for (int r = 0; r < c.nranks; ++r) {
        if (c.channels == 1) {
            reused.rank          = r;
            reused.scratch_count = 0;
            reused.steps.clear();
            reused.deps.clear();
            schedule::builder b(reused);
            LOOM_CHECK(a.build(c, r, b));
            LOOM_CHECK(e.add_rank(reused));
            continue;
        }
        LOOM_ASSIGN(schedule::rank_schedule rs, algorithms::generate_rank(a, c, r));
        LOOM_CHECK(e.add_rank(rs));
    }
    return finish(e);
}

}  // namespace loom::sim
