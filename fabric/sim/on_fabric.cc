// SPDX-License-Identifier: Apache-2.0
// A simulator fabric from a topology::fabric (sim.hh: shape_of, on_fabric): the shape the
// ranks form, so that transfers can be routed, and each of its links' α and BW.
//
// Only links between two ranks (lattices, full mesh) or between a rank and the star's switch
// are the simulator's; other links (a second switch, DPUs without a rank) are not on any
// route and are ignored. A link between two ranks that the shape does not have is an error:
// the simulator would route around it, so the file would not be what is simulated.
#include <algorithm>
#include <unordered_set>

#include "base/check.hh"
#include "sim.hh"

namespace loom::sim {
namespace {

using tfabric = topology::fabric;

std::string node_name(const tfabric& f, int node) {
    return "'" + f.nodes()[node].id + "'";
}

std::string ranks_text(const tfabric& f, int a, int b) {
    return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " (nodes " +
           node_name(f, f.node_of_rank(a)) + " and " + node_name(f, f.node_of_rank(b)) + ")";
}

std::string join_dims(const std::vector<int>& dims) {
    std::string out;
    for (size_t i = 0; i < dims.size(); ++i) {
        out += (i ? "x" : "") + std::to_string(dims[i]);
    }
    return out;
}

// Every link between two ranks, as rank pairs (link_costs::key), first link kept.
std::unordered_map<uint64_t, int> rank_links(const tfabric& f) {
    std::unordered_map<uint64_t, int> out;
    const auto& nodes = f.nodes();
    for (size_t id = 0; id < f.links().size(); ++id) {
        const auto& l = f.links()[id];
        int a = nodes[l.a].rank, b = nodes[l.b].rank;
        if (a >= 0 && b >= 0 && a != b) {
            out.emplace(link_costs::key(a, b), static_cast<int>(id));
        }
    }
    return out;
}

// The node without a rank that is linked to the most ranks (a star's switch; on a star all
// of them); -1 if no rank links to such a node. *count: how many ranks it links.
int star_switch(const tfabric& f, int* count = nullptr) {
    std::unordered_map<int, std::unordered_set<int>> ranks_of;
    for (const auto& l : f.links()) {
        int ra = f.nodes()[l.a].rank, rb = f.nodes()[l.b].rank;
        if (ra >= 0 && rb < 0) {
            ranks_of[l.b].insert(ra);
        } else if (rb >= 0 && ra < 0) {
            ranks_of[l.a].insert(rb);
        }
    }
    int best = -1, most = 0;
    for (const auto& [node, ranks] : ranks_of) {
        int k = static_cast<int>(ranks.size());
        if (k > most || (k == most && node < best)) {
            best = node;
            most = k;
        }
    }
    if (count != nullptr) {
        *count = most;
    }
    return best;
}

result<topology::shape> parse_shape(const std::string& text) {
    auto s = topology::shape::parse(text);
    if (!s) {
        return invalid_argument("inferred shape " + text + ": " + s.error().message());
    }
    return s;
}

// Coordinates on every rank: their extent gives the dimensions; wraparound links say torus.
result<topology::shape> shape_from_coords(const tfabric& f,
                                          const std::unordered_map<uint64_t, int>& pairs) {
    const int n  = f.nranks();
    const auto k = f.nodes()[f.node_of_rank(0)].coords.size();
    std::vector<int> dims(k, 1);
    for (int r = 0; r < n; ++r) {
        const auto& c = f.nodes()[f.node_of_rank(r)].coords;
        if (c.size() != k) {
            return invalid_argument("rank " + std::to_string(r) + " (node " +
                                    node_name(f, f.node_of_rank(r)) +
                                    ") has no coordinates; give all ranks coordinates or a "
                                    "\"shape\"");
        }
        for (size_t i = 0; i < k; ++i) {
            if (c[i] < 0) {
                return invalid_argument("rank " + std::to_string(r) + " has a negative coordinate");
            }
            dims[i] = std::max(dims[i], c[i] + 1);
        }
    }
    LOOM_ASSIGN(topology::shape mesh, parse_shape("mesh:" + join_dims(dims)));
    if (mesh.size() != n) {
        return invalid_argument("the coordinates span " + join_dims(dims) + " = " +
                                std::to_string(mesh.size()) + " places for " + std::to_string(n) +
                                " ranks");
    }
    for (int r = 0; r < n; ++r) {
        if (f.nodes()[f.node_of_rank(r)].coords != mesh.coords(r)) {
            return invalid_argument("rank " + std::to_string(r) +
                                    "'s coordinates are not its row-major place in " +
                                    join_dims(dims) + " (the last coordinate varies fastest)");
        }
    }
    // A dimension longer than 2 wraps when rank 0 is linked to the far end of its line.
    int longer = 0, wrapping = 0;
    for (size_t i = 0; i < k; ++i) {
        if (dims[i] < 3) {
            continue;
        }
        ++longer;
        std::vector<int> far(k, 0);
        far[i] = dims[i] - 1;
        wrapping += pairs.count(link_costs::key(0, mesh.rank_of(far))) ? 1 : 0;
    }
    if (wrapping > 0 && wrapping < longer) {
        return invalid_argument("some dimensions of " + join_dims(dims) +
                                " have wraparound links and others not; give a \"shape\"");
    }
    if (longer > 0 && wrapping == 0) {
        return mesh;
    }
    return parse_shape((k == 1 ? "ring:" : "torus:") + join_dims(dims));
}

}  // namespace

result<topology::shape> shape_of(const topology::fabric& f) {
    if (f.lattice()) {
        return *f.lattice();
    }
    const int n = f.nranks();
    if (n == 0) {
        return invalid_argument("the fabric has no ranks");
    }
    const auto pairs = rank_links(f);
    if (!f.nodes()[f.node_of_rank(0)].coords.empty()) {
        return shape_from_coords(f, pairs);
    }
    const std::string count = std::to_string(n);
    int linked              = 0;
    if (pairs.empty() && star_switch(f, &linked) >= 0 && linked == n) {
        return parse_shape("star:" + count);
    }
    if (n >= 2 && static_cast<int64_t>(pairs.size()) == int64_t{n} * (n - 1) / 2) {
        return parse_shape("fullmesh:" + count);
    }
    if (n >= 3 && static_cast<int>(pairs.size()) == n &&
        std::all_of(pairs.begin(), pairs.end(), [n](const auto& p) {
            auto lo = static_cast<int>(p.first >> 32), hi = static_cast<int>(p.first & 0xffffffff);
            return hi == lo + 1 || (lo == 0 && hi == n - 1);
        })) {
        return parse_shape("ring:" + count);
    }
    return invalid_argument(
        "cannot tell which shape the fabric's " + count +
        " ranks form (the simulator routes on star, fullmesh, ring, torus or mesh): give "
        "\"shape\" (e.g. \"torus:4x4\") or coordinates on every rank");
}

result<fabric> on_fabric(const topology::fabric& f, const fabric& base, std::string_view origin) {
    auto prefixed = [&](status st) {
        return origin.empty() ? st : st.prefix("fabric file '" + std::string(origin) + "': ");
    };
    auto shape = shape_of(f);
    if (!shape) {
        return prefixed(shape.error());
    }
    const topology::shape& s = *shape;
    const int n              = s.size();
    auto costs               = std::make_shared<link_costs>();
    costs->shape             = s;
    const auto pairs         = rank_links(f);
    auto cost_of             = [&](int id) {
        const auto& l = f.links()[id];
        return link_costs::cost{l.alpha_s, l.bw_bytes_per_s};
    };
    if (s.type() == topology::kind::star) {
        if (!pairs.empty()) {
            auto key = pairs.begin()->first;
            return prefixed(invalid_argument(
                "a link joins " +
                ranks_text(f, static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffff)) +
                ", but the ranks of " + s.to_string() + " link only to its switch"));
        }
        const int sw = star_switch(f);
        for (int r = 0; r < n; ++r) {
            int id = sw < 0 ? -1 : f.link_between(f.node_of_rank(r), sw);
            if (id < 0) {
                return prefixed(invalid_argument(
                    s.to_string() + " needs a switch linked to every rank; rank " +
                    std::to_string(r) + " (node " + node_name(f, f.node_of_rank(r)) +
                    ") has no link to " + (sw < 0 ? "one" : node_name(f, sw))));
            }
            costs->port.push_back(cost_of(id));
        }
    } else {
        // The pairs the shape links: every pair on a full mesh, neighbours on a lattice.
        for (int a = 0; a < n; ++a) {
            std::vector<int> wanted;
            if (s.type() == topology::kind::full_mesh) {
                for (int b = a + 1; b < n; ++b) {
                    wanted.push_back(b);
                }
            } else {
                for (int b : s.neighbours(a)) {
                    if (b > a) {
                        wanted.push_back(b);
                    }
                }
            }
            for (int b : wanted) {
                auto it = pairs.find(link_costs::key(a, b));
                if (it == pairs.end()) {
                    return prefixed(invalid_argument(s.to_string() + " needs a link between " +
                                                     ranks_text(f, a, b) +
                                                     ", and the fabric has none"));
                }
                costs->pair.emplace(it->first, cost_of(it->second));
            }
        }
        if (pairs.size() != costs->pair.size()) {
            for (const auto& [key, id] : pairs) {
                if (!costs->pair.count(key)) {
                    return prefixed(
                        invalid_argument("a link joins " +
                                         ranks_text(f, static_cast<int>(key >> 32),
                                                    static_cast<int>(key & 0xffffffff)) +
                                         ", which are not neighbours on " + s.to_string() +
                                         " (the simulator routes on its links only)"));
                }
            }
        }
    }
    bool first = true;
    auto widen = [&](const link_costs::cost& c) {
        costs->slowest.alpha_s = first ? c.alpha_s : std::max(costs->slowest.alpha_s, c.alpha_s);
        costs->slowest.bw_bytes_per_s =
            first ? c.bw_bytes_per_s : std::min(costs->slowest.bw_bytes_per_s, c.bw_bytes_per_s);
        first = false;
    };
    for (const auto& c : costs->port) {
        widen(c);
    }
    for (const auto& [key, c] : costs->pair) {
        widen(c);
    }
    fabric out = base;
    out.topo   = s;
    if (!first) {
        out.alpha_s        = costs->slowest.alpha_s;
        out.bw_bytes_per_s = costs->slowest.bw_bytes_per_s;
    } else {
        costs->slowest = {base.alpha_s, base.bw_bytes_per_s};  // one rank, no links
    }
    out.per_link = std::move(costs);
    return out;
}

}  // namespace loom::sim
