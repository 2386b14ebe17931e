// SPDX-License-Identifier: Apache-2.0
// Routes and route tables as the controller serves them (routes.hh).
#include "routes.hh"

#include <deque>

#include "base/check.hh"
#include "routing/dateline.hh"
#include "routing/route_table.hh"

namespace loom::control {
namespace {

using topology::fabric;

bool on_lattice(const fabric& f) {
    return f.lattice().has_value() && f.lattice()->is_lattice();
}

result<int> node_named(const fabric& f, std::string_view id) {
    int i = f.find_node(id);
    if (i < 0) {
        return invalid_argument("the fabric has no node '" + std::string(id) + "'");
    }
    return i;
}

result<int> rank_of(const fabric& f, int node) {
    int r = f.nodes()[node].rank;
    if (r < 0) {
        return invalid_argument("node '" + f.nodes()[node].id +
                                "' carries no rank: on a lattice, routes run between ranks");
    }
    return r;
}

std::string how_on_lattice(routing::tie_rule ties) {
    return "dimension-ordered (" + std::string(routing::tie_rule_name(ties)) +
           " ties, dateline VCs)";
}

const char* vc_rule_name(routing::vc_rule r) {
    switch (r) {
        case routing::vc_rule::vc0:
            return "vc0";
        case routing::vc_rule::keep:
            return "keep";
        case routing::vc_rule::vc1:
            return "vc1";
    }
    return "vc0";
}

// Breadth-first over in-service nodes from `from`: the node each was reached from (-1 for
// `from` and the unreached). An endpoint that is not `from` is reached but not left, so it
// is never a hop in between.
std::vector<int> reached_from(const fabric& f, const out_of_service& out, int from) {
    const auto& nodes = f.nodes();
    std::vector<int> came(nodes.size(), -1);
    std::vector<bool> seen(nodes.size(), false);
    std::deque<int> queue{from};
    seen[from] = true;
    while (!queue.empty()) {
        int at = queue.front();
        queue.pop_front();
        if (at != from && nodes[at].kind == topology::node_kind::endpoint) {
            continue;
        }
        for (int link : f.links_of(at)) {
            const auto& l = f.links()[link];
            int next      = l.a == at ? l.b : l.a;
            if (!seen[next] && out.count(nodes[next].id) == 0) {
                seen[next] = true;
                came[next] = at;
                queue.push_back(next);
            }
        }
    }
    return came;
}

// The index of the link between two wired nodes among `from`'s links (its port).
int port_towards(const fabric& f, int from, int to) {
    auto links = f.links_of(from);
    for (size_t k = 0; k < links.size(); ++k) {
        const auto& l = f.links()[links[k]];
        if ((l.a == from && l.b == to) || (l.b == from && l.a == to)) {
            return int(k);
        }
    }
    return -1;
}

}  // namespace

result<route_answer> route_between(const fabric& f, const out_of_service& out,
                                   std::string_view from, std::string_view to,
                                   routing::tie_rule ties) {
    LOOM_ASSIGN(int a, node_named(f, from));
    LOOM_ASSIGN(int b, node_named(f, to));
    const auto& nodes = f.nodes();
    route_answer answer;
    if (on_lattice(f)) {
        LOOM_ASSIGN(int ra, rank_of(f, a));
        LOOM_ASSIGN(int rb, rank_of(f, b));
        answer.how = how_on_lattice(ties);
        for (const routing::hop& h :
             routing::route_hops(*f.lattice(), ra, rb, ties, routing::vc_policy::dateline)) {
            const std::string& next = nodes[f.node_of_rank(h.to)].id;
            answer.steps.push_back({nodes[f.node_of_rank(h.from)].id, next, h.port, h.vc, h.dim});
        }
        if (out.count(nodes[a].id) > 0) {
            answer.blocked.push_back(nodes[a].id + " is " + out.at(nodes[a].id));
        }
        for (const route_step& s : answer.steps) {
            if (out.count(s.to) > 0) {
                answer.blocked.push_back(s.to + " is " + out.at(s.to));
            }
        }
        return answer;
    }
    answer.how = "shortest path over in-service nodes";
    for (int end : {a, b}) {
        if (out.count(nodes[end].id) > 0) {
            answer.blocked.push_back(nodes[end].id + " is " + out.at(nodes[end].id));
        }
    }
    if (!answer.blocked.empty() || a == b) {
        return answer;
    }
    std::vector<int> came = reached_from(f, out, a);
    if (came[b] < 0) {
        return not_applicable("no way from " + nodes[a].id + " to " + nodes[b].id +
                              " over in-service nodes");
    }
    std::vector<int> path{b};
    while (path.back() != a) {
        path.push_back(came[path.back()]);
    }
    for (size_t k = path.size() - 1; k > 0; --k) {
        answer.steps.push_back({nodes[path[k]].id, nodes[path[k - 1]].id,
                                port_towards(f, path[k], path[k - 1]), 0, -1});
    }
    return answer;
}

result<std::vector<table_entry>> route_table_of(const fabric& f, const out_of_service& out,
                                                std::string_view at, routing::tie_rule ties) {
    LOOM_ASSIGN(int node, node_named(f, at));
    const auto& nodes = f.nodes();
    std::vector<table_entry> table(f.nranks());
    if (on_lattice(f)) {
        LOOM_ASSIGN(int router, rank_of(f, node));
        auto t =
            routing::route_table::build(*f.lattice(), router, ties, routing::vc_policy::dateline);
        for (int r = 0; r < f.nranks(); ++r) {
            const routing::route_entry& e = t.to(r);
            table[r].rank                 = r;
            table[r].next                 = e.next >= 0 ? nodes[f.node_of_rank(e.next)].id : "";
            table[r].port                 = e.port;
            table[r].dim                  = e.dim;
            table[r].vc_rule              = vc_rule_name(e.vc);
        }
        return table;
    }
    std::vector<int> came = reached_from(f, out, node);
    for (int r = 0; r < f.nranks(); ++r) {
        table[r].rank = r;
        int dst       = f.node_of_rank(r);
        if (dst == node) {
            continue;
        }
        if (came[dst] < 0) {
            table[r].reachable = false;
            continue;
        }
        int next = dst;
        while (came[next] != node) {
            next = came[next];
        }
        table[r].next = nodes[next].id;
        table[r].port = port_towards(f, node, next);
    }
    return table;
}

}  // namespace loom::control
