// SPDX-License-Identifier: Apache-2.0
// fabric_from_shape: the links a shape implies, all of one class; load_fabric: a shape or a
// fabric file from one string (the tools' --topology/--fabric argument).
#include <string>

#include "base/check.hh"
#include "census.hh"
#include "fabric.hh"

namespace loom::topology {
namespace {

// The + link of `rank` along `dim`, if it is one the lattice has and not already counted:
// on a size-2 wrapping dimension the + link of coordinate 1 is coordinate 0's.
int plus_partner(const shape& s, int rank, int dim) {
    const int d = s.dims()[dim];
    if (d < 2 || (d == 2 && s.coords(rank)[dim] == 1)) {
        return -1;
    }
    return s.neighbour(rank, dim, +1);
}

std::vector<link> shape_links(const shape& s, const link_params& p) {
    std::vector<link> out;
    out.reserve(static_cast<size_t>(link_count(s)));
    auto add    = [&](int a, int b) { out.push_back({a, b, 0, p.alpha_s, p.bw_bytes_per_s}); };
    const int n = s.size();
    for (int r = 0; r < n; ++r) {
        if (s.type() == kind::star) {
            add(r, n);  // node n is the switch
        } else if (s.type() == kind::full_mesh) {
            for (int q = r + 1; q < n; ++q) {
                add(r, q);
            }
        } else {
            for (int dim = 0; dim < s.ndims(); ++dim) {
                if (int q = plus_partner(s, r, dim); q >= 0) {
                    add(r, q);
                }
            }
        }
    }
    return out;
}

}  // namespace

result<fabric> fabric_from_shape(const shape& s, const link_params& params) {
    if (int64_t count = link_count(s); count > max_fabric_links) {
        return invalid_argument(s.to_string() + " has " + std::to_string(count) +
                                " links, more than the " + std::to_string(max_fabric_links) +
                                " a fabric holds");
    }
    std::vector<node> nodes(s.size());
    for (int r = 0; r < s.size(); ++r) {
        nodes[r].id   = "r" + std::to_string(r);
        nodes[r].rank = r;
        if (s.is_lattice()) {
            nodes[r].coords = s.coords(r);
        }
    }
    if (s.type() == kind::star) {
        nodes.push_back({"switch", node_kind::switch_node, -1, {}, false, -1});
    }
    return fabric::make(std::move(nodes), shape_links(s, params), {params.link_class}, s);
}

bool names_fabric_file(std::string_view text) {
    return text.find('/') != std::string_view::npos || text.ends_with(".json");
}

result<fabric> load_fabric(std::string_view shape_or_path, const link_params& params) {
    if (names_fabric_file(shape_or_path)) {
        return load_fabric_file(std::string(shape_or_path));
    }
    LOOM_ASSIGN(shape s, shape::parse(shape_or_path));
    return fabric_from_shape(s, params);
}

}  // namespace loom::topology
