// SPDX-License-Identifier: Apache-2.0
#include "fabric_check.hh"
#include "base/check.hh"

#include <cmath>
#include <unordered_map>

namespace loom::topology::detail {
namespace {

std::string name_of(const node& n) {
    return std::string(node_kind_name(n.kind)) + " '" + n.id + "'";
}

std::string coords_text(const std::vector<int>& c) {
    std::string out = "[";
    for (size_t i = 0; i < c.size(); ++i) {
        out += (i ? ", " : "") + std::to_string(c[i]);
    }
    return out + "]";
}

status check_ids(const std::vector<node>& nodes) {
    if (nodes.empty()) {
        return parse_error("the fabric has no nodes");
    }
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].id.empty()) {
            return parse_error("node " + std::to_string(i) + ": empty id");
        }
        auto [it, fresh] = seen.emplace(nodes[i].id, i);
        if (!fresh) {
            return parse_error("duplicate node id '" + nodes[i].id + "' (nodes " +
                               std::to_string(it->second) + " and " + std::to_string(i) + ")");
        }
    }
    return status::ok();
}

// Endpoints own data, so they need a rank; a switch only forwards and aggregates, so it has
// none; only switches and DPUs aggregate or sit in an aggregation tree.
status check_kind(const node& n) {
    if (n.kind == node_kind::endpoint && n.rank < 0) {
        return parse_error(name_of(n) + " has no rank");
    }
    if (n.kind == node_kind::switch_node && n.rank >= 0) {
        return parse_error(name_of(n) + " has a rank; switches carry none");
    }
    if (n.kind == node_kind::endpoint && (n.in_network || n.parent >= 0)) {
        return parse_error(name_of(n) + ": in_network and parent are for switches and DPUs");
    }
    return status::ok();
}

// The ranks are 0..R-1 with R the number of ranked nodes: each exactly once. Repeats are
// reported first, then the lowest rank nobody carries (there is one when a rank is >= R).
status check_ranks(const std::vector<node>& nodes, int* nranks) {
    std::unordered_map<int, size_t> owner;
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].rank < 0) {
            continue;
        }
        auto [it, fresh] = owner.emplace(nodes[i].rank, i);
        if (!fresh) {
            return parse_error("rank " + std::to_string(nodes[i].rank) + " is given twice: " +
                               name_of(nodes[it->second]) + " and " + name_of(nodes[i]));
        }
    }
    const int r = static_cast<int>(owner.size());
    for (const node& n : nodes) {
        if (n.rank >= r) {
            int missing = 0;
            while (owner.count(missing)) {
                ++missing;
            }
            return parse_error("rank " + std::to_string(missing) + " is missing: the " +
                               std::to_string(r) + " ranked nodes must carry ranks 0.." +
                               std::to_string(r - 1) + " (" + name_of(n) + " has rank " +
                               std::to_string(n.rank) + ")");
        }
    }
    *nranks = r;
    return status::ok();
}

status check_coords(const std::vector<node>& nodes, const std::optional<shape>& lattice) {
    const node* first = nullptr;
    for (const node& n : nodes) {
        if (n.coords.empty()) {
            continue;
        }
        if (lattice && n.rank < 0) {
            return parse_error(name_of(n) + " has coordinates but no rank in " +
                               lattice->to_string());
        }
        if (lattice && n.coords != lattice->coords(n.rank)) {
            return parse_error(name_of(n) + ": coordinates " + coords_text(n.coords) +
                               " are not rank " + std::to_string(n.rank) + "'s " +
                               coords_text(lattice->coords(n.rank)) + " in " +
                               lattice->to_string() + " (row-major, last dimension fastest)");
        }
        if (first && n.coords.size() != first->coords.size()) {
            return parse_error(name_of(n) + " has " + std::to_string(n.coords.size()) +
                               " coordinates but " + name_of(*first) + " has " +
                               std::to_string(first->coords.size()));
        }
        first = first ? first : &n;
    }
    return status::ok();
}

// A parent is a switch or DPU, and following parents never comes back (a tree, not a loop).
status check_parents(const std::vector<node>& nodes) {
    const int count = static_cast<int>(nodes.size());
    for (const node& n : nodes) {
        if (n.parent >= count || (n.parent >= 0 && nodes[n.parent].kind == node_kind::endpoint)) {
            return parse_error(name_of(n) + ": the parent must be a switch or a DPU");
        }
    }
    // Walk each chain once: 1 = on the chain being walked, 2 = known to end at a root.
    std::vector<char> state(count, 0);
    for (int i = 0; i < count; ++i) {
        int at = i;
        while (at >= 0 && state[at] == 0) {
            state[at] = 1;
            at        = nodes[at].parent;
        }
        if (at >= 0 && state[at] == 1) {
            return parse_error(name_of(nodes[at]) + ": its chain of parents has a cycle");
        }
        for (at = i; at >= 0 && state[at] == 1; at = nodes[at].parent) {
            state[at] = 2;
        }
    }
    return status::ok();
}

}  // namespace

status check_nodes(const std::vector<node>& nodes, const std::optional<shape>& lattice) {
    LOOM_CHECK(check_ids(nodes));
    for (const node& n : nodes) {
        LOOM_CHECK(check_kind(n));
    }
    int nranks = 0;
    LOOM_CHECK(check_ranks(nodes, &nranks));
    if (lattice && lattice->size() != nranks) {
        return parse_error("shape " + lattice->to_string() + " has " +
                           std::to_string(lattice->size()) + " ranks but the fabric has " +
                           std::to_string(nranks) + " ranked nodes");
    }
    LOOM_CHECK(check_coords(nodes, lattice));
    return check_parents(nodes);
}

status check_links(const std::vector<node>& nodes, const std::vector<link>& links,
                   size_t nclasses) {
    const int count = static_cast<int>(nodes.size());
    for (size_t i = 0; i < links.size(); ++i) {
        const link& l     = links[i];
        std::string where = "link " + std::to_string(i);
        if (l.a < 0 || l.a >= count || l.b < 0 || l.b >= count) {
            return parse_error(where + ": an end is not a node");
        }
        where += " (" + nodes[l.a].id + " - " + nodes[l.b].id + ")";
        if (l.a == l.b) {
            return parse_error(where + ": both ends are the same node");
        }
        if (l.link_class < 0 || static_cast<size_t>(l.link_class) >= nclasses) {
            return parse_error(where + ": unknown link class");
        }
        if (!std::isfinite(l.alpha_s) || l.alpha_s < 0) {
            return parse_error(where + ": alpha must be a finite number of seconds >= 0");
        }
        if (!std::isfinite(l.bw_bytes_per_s) || l.bw_bytes_per_s <= 0) {
            return parse_error(where + ": bw must be a finite number of bytes/s > 0");
        }
    }
    return status::ok();
}

}  // namespace loom::topology::detail
