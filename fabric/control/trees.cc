// SPDX-License-Identifier: Apache-2.0
// Aggregation trees from the fabric and the nodes out of service (trees.hh).
#include "trees.hh"

#include <algorithm>

namespace loom::control {
namespace {

using topology::fabric;

// Hops from each in-network node up its declared parents to a root (-1 elsewhere).
// fabric::make refuses parent cycles; the bound keeps a bad file from looping anyway.
std::vector<int> declared_levels(const fabric& f) {
    const auto& nodes = f.nodes();
    std::vector<int> level(nodes.size(), -1);
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (!nodes[i].in_network) {
            continue;
        }
        int hops = 0;
        for (int at = nodes[i].parent; at >= 0 && hops <= int(nodes.size());
             at     = nodes[at].parent) {
            ++hops;
        }
        level[i] = hops;
    }
    return level;
}

int other_end(const fabric& f, int link, int node) {
    const auto& l = f.links()[link];
    return l.a == node ? l.b : l.a;
}

}  // namespace

tree_plan plan_trees(const fabric& f, const out_of_service& out) {
    const auto& nodes      = f.nodes();
    const int n            = int(nodes.size());
    auto in_service        = [&](int i) { return out.count(nodes[i].id) == 0; };
    std::vector<int> level = declared_levels(f);

    tree_plan plan;
    // The parent each in-service in-network node takes: its declared one while in service,
    // else a wired in-network node nearer the root (levels fall strictly along parents).
    std::vector<int> parent(n, -1);
    std::vector<bool> moved(n, false);
    for (int i = 0; i < n; ++i) {
        if (!nodes[i].in_network) {
            continue;
        }
        ++plan.in_network_nodes;
        if (!in_service(i) || nodes[i].parent < 0) {
            continue;
        }
        if (in_service(nodes[i].parent)) {
            parent[i] = nodes[i].parent;
            continue;
        }
        int best = -1;
        for (int link : f.links_of(i)) {
            int m = other_end(f, link, i);
            if (nodes[m].in_network && in_service(m) && level[m] < level[i] &&
                (best < 0 || level[m] < level[best] || (level[m] == level[best] && m < best))) {
                best = m;
            }
        }
        parent[i] = best;
        moved[i]  = true;
    }

    // Each rank hangs off the first in-service in-network node wired to it (itself, for a DPU
    // that carries a rank); with all of them out it is cut.
    std::vector<std::vector<int>> ranks_at(n);
    for (int r = 0; r < f.nranks(); ++r) {
        int e = f.node_of_rank(r);
        std::vector<int> wired;
        if (nodes[e].in_network) {
            wired.push_back(e);
        }
        for (int link : f.links_of(e)) {
            int m = other_end(f, link, e);
            if (nodes[m].in_network && std::find(wired.begin(), wired.end(), m) == wired.end()) {
                wired.push_back(m);
            }
        }
        if (wired.empty()) {
            if (plan.in_network_nodes > 0) {
                plan.cut.push_back({r, "no in-network node is wired to " + nodes[e].id});
            }
            continue;
        }
        auto up = std::find_if(wired.begin(), wired.end(), in_service);
        if (up == wired.end()) {
            const std::string& id = nodes[wired.front()].id;
            plan.cut.push_back({r, id + " is " + out.at(id)});
            continue;
        }
        ranks_at[*up].push_back(r);
    }

    // Trees: each in-service root, then its descendants level by level, file order within.
    std::vector<std::vector<int>> children(n);
    for (int i = 0; i < n; ++i) {
        if (parent[i] >= 0) {
            children[parent[i]].push_back(i);
        }
    }
    for (int root = 0; root < n; ++root) {
        if (!nodes[root].in_network || !in_service(root) || parent[root] >= 0) {
            continue;
        }
        aggregation_tree tree;
        tree.root        = nodes[root].id;
        tree.as_declared = !moved[root];
        std::vector<std::pair<int, int>> queue{{root, 0}};
        for (size_t q = 0; q < queue.size(); ++q) {
            auto [i, depth] = queue[q];
            tree_node t;
            t.id    = nodes[i].id;
            t.level = depth;
            if (parent[i] >= 0) {
                t.parent = nodes[parent[i]].id;
            }
            for (int c : children[i]) {
                t.children.push_back(nodes[c].id);
                queue.push_back({c, depth + 1});
                tree.as_declared = tree.as_declared && !moved[c];
            }
            t.ranks = ranks_at[i];
            tree.ranks.insert(tree.ranks.end(), t.ranks.begin(), t.ranks.end());
            tree.nodes.push_back(std::move(t));
        }
        std::sort(tree.ranks.begin(), tree.ranks.end());
        plan.trees.push_back(std::move(tree));
    }
    return plan;
}

const aggregation_tree* tree_for_ranks(const tree_plan& plan, const std::vector<int>& ranks,
                                       std::string* why) {
    if (plan.in_network_nodes == 0) {
        *why = "the fabric has no in-network node";
        return nullptr;
    }
    for (int r : ranks) {
        for (const cut_rank& c : plan.cut) {
            if (c.rank == r) {
                *why = "rank " + std::to_string(r) + " has no in-network path: " + c.because;
                return nullptr;
            }
        }
    }
    for (const aggregation_tree& t : plan.trees) {
        if (std::all_of(ranks.begin(), ranks.end(), [&](int r) {
                return std::binary_search(t.ranks.begin(), t.ranks.end(), r);
            })) {
            return &t;
        }
    }
    *why = "no one tree holds every rank (" + std::to_string(plan.trees.size()) +
           " trees: an out-of-service node split the fabric's tree)";
    return nullptr;
}

}  // namespace loom::control
