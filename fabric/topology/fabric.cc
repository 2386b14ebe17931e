// SPDX-License-Identifier: Apache-2.0
// fabric: construction through the checks, and the indexes behind the look-ups (rank →
// node, id → node, node → links).
#include "fabric.hh"
#include "base/check.hh"

#include "fabric_check.hh"

namespace loom::topology {

const char* node_kind_name(node_kind k) {
    switch (k) {
        case node_kind::endpoint:
            return "endpoint";
        case node_kind::switch_node:
            return "switch";
        case node_kind::dpu:
            return "dpu";
    }
    return "?";
}

result<fabric> fabric::make(std::vector<node> nodes, std::vector<link> links,
                            std::vector<std::string> classes, std::optional<shape> lattice) {
    LOOM_CHECK(detail::check_nodes(nodes, lattice));
    LOOM_CHECK(detail::check_links(nodes, links, classes.size()));
    fabric f;
    f.nodes_   = std::move(nodes);
    f.links_   = std::move(links);
    f.classes_ = std::move(classes);
    f.lattice_ = std::move(lattice);
    f.index();
    return f;
}

// Adjacency in one flat array (counting sort by node), so a star with millions of ranks
// costs two vectors rather than one vector per node.
void fabric::index() {
    const size_t count = nodes_.size();
    int nranks         = 0;
    for (size_t i = 0; i < count; ++i) {
        by_id_.emplace(nodes_[i].id, static_cast<int>(i));
        nranks += nodes_[i].rank >= 0 ? 1 : 0;
    }
    rank_node_.assign(nranks, -1);
    for (size_t i = 0; i < count; ++i) {
        if (nodes_[i].rank >= 0) {
            rank_node_[nodes_[i].rank] = static_cast<int>(i);
        }
    }
    adjacency_at_.assign(count + 1, 0);
    for (const link& l : links_) {
        ++adjacency_at_[l.a + 1];
        ++adjacency_at_[l.b + 1];
    }
    for (size_t i = 0; i < count; ++i) {
        adjacency_at_[i + 1] += adjacency_at_[i];
    }
    adjacency_.resize(links_.size() * 2);
    std::vector<int> fill(adjacency_at_.begin(), adjacency_at_.end() - 1);
    for (size_t id = 0; id < links_.size(); ++id) {
        adjacency_[fill[links_[id].a]++] = static_cast<int>(id);
        adjacency_[fill[links_[id].b]++] = static_cast<int>(id);
    }
}

int fabric::find_node(std::string_view id) const {
    auto it = by_id_.find(std::string(id));
    return it == by_id_.end() ? -1 : it->second;
}

std::span<const int> fabric::links_of(int node) const {
    return {adjacency_.data() + adjacency_at_[node],
            static_cast<size_t>(adjacency_at_[node + 1] - adjacency_at_[node])};
}

int fabric::link_between(int node_a, int node_b) const {
    // Scan the end with fewer links: an endpoint's few rather than a star switch's N.
    const bool a_smaller = links_of(node_a).size() <= links_of(node_b).size();
    const int from = a_smaller ? node_a : node_b, to = a_smaller ? node_b : node_a;
    for (int id : links_of(from)) {
        const link& l = links_[id];
        if ((l.a == from && l.b == to) || (l.b == from && l.a == to)) {
            return id;
        }
    }
    return -1;
}

int fabric::link_between_ranks(int rank_a, int rank_b) const {
    return link_between(node_of_rank(rank_a), node_of_rank(rank_b));
}

}  // namespace loom::topology
