// SPDX-License-Identifier: Apache-2.0
// The fabric's paths of API v1 (api_fabric.hh).
#include "api_fabric.hh"

#include <charconv>
#include <string>
#include <vector>

#include "api_common.hh"
#include "control/routes.hh"
#include "controller.hh"

namespace loom::ctld {

using namespace loom::control;  // what this file serves
namespace {

constexpr size_t max_query_ranks = 1 << 20;

// The fabric, or a 404 saying the controller holds none.
const topology::fabric* held_fabric(controller& ctl, httplib::Response& res) {
    const topology::fabric* f = ctl.fabric();
    if (f == nullptr) {
        refuse(res, 404, "loom-ctld holds no fabric (start it with --fabric SHAPE|FILE)");
    }
    return f;
}

std::string service_of(const out_of_service& out, const std::string& id) {
    auto it = out.find(id);
    return it == out.end() ? "in service" : it->second;
}

void show_fabric(controller& ctl, httplib::Response& res) {
    const topology::fabric* f = held_fabric(ctl, res);
    if (f == nullptr) {
        return;
    }
    out_of_service out = ctl.out_of_service();
    json nodes         = json::array();
    for (const topology::node& n : f->nodes()) {
        json j = {{"id", n.id},
                  {"kind", topology::node_kind_name(n.kind)},
                  {"in_network", n.in_network},
                  {"service", service_of(out, n.id)}};
        if (n.rank >= 0) {
            j["rank"] = n.rank;
        }
        if (n.parent >= 0) {
            j["parent"] = f->nodes()[n.parent].id;
        }
        nodes.push_back(std::move(j));
    }
    reply(res, 200,
          {{"source", ctl.config().fabric},
           {"shape", f->lattice() ? json(f->lattice()->to_string()) : json(nullptr)},
           {"ranks", f->nranks()},
           {"links", f->links().size()},
           {"ties", ctl.config().ties_name},
           {"nodes", nodes}});
}

void show_route(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    const topology::fabric* f = held_fabric(ctl, res);
    if (f == nullptr) {
        return;
    }
    if (!req.has_param("from") || !req.has_param("to")) {
        refuse(res, 400, "a route needs ?from=NODE&to=NODE");
        return;
    }
    std::string from = req.get_param_value("from"), to = req.get_param_value("to");
    for (const std::string& id : {from, to}) {
        if (f->find_node(id) < 0) {
            refuse(res, 404, "the fabric has no node '" + id + "'");
            return;
        }
    }
    auto route = route_between(*f, ctl.out_of_service(), from, to, ctl.config().ties);
    if (!route) {
        // A lattice route between nodes without ranks is a bad question (400); no way over
        // the nodes in service is an answer (reachable: false).
        if (route.error().code() == LOOM_ERR_INVALID_ARGUMENT) {
            refuse(res, 400, route.error().message());
            return;
        }
        reply(res, 200,
              {{"from", from}, {"to", to}, {"reachable", false}, {"why", route.error().message()}});
        return;
    }
    json steps = json::array();
    for (const route_step& s : route->steps) {
        steps.push_back(
            {{"from", s.from}, {"to", s.to}, {"port", s.port}, {"vc", s.vc}, {"dim", s.dim}});
    }
    reply(res, 200,
          {{"from", from},
           {"to", to},
           {"how", route->how},
           {"hops", route->steps.size()},
           {"reachable", route->blocked.empty()},
           {"blocked", route->blocked},
           {"steps", steps}});
}

void show_table(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    const topology::fabric* f = held_fabric(ctl, res);
    if (f == nullptr) {
        return;
    }
    std::string node = req.matches[1].str();
    if (f->find_node(node) < 0) {
        refuse(res, 404, "the fabric has no node '" + node + "'");
        return;
    }
    auto table = route_table_of(*f, ctl.out_of_service(), node, ctl.config().ties);
    if (!table) {
        refuse(res, 400, table.error().message());
        return;
    }
    json entries = json::array();
    for (const table_entry& e : *table) {
        json j = {{"rank", e.rank}, {"next", e.next}, {"port", e.port}, {"reachable", e.reachable}};
        if (!e.vc_rule.empty()) {
            j["dim"]     = e.dim;
            j["vc_rule"] = e.vc_rule;
        }
        entries.push_back(std::move(j));
    }
    reply(res, 200, {{"node", node}, {"entries", entries}});
}

// "?ranks=0,1,2" (or "all"): the ranks a job would reduce over.
bool read_ranks(const std::string& text, int nranks, std::vector<int>* out, std::string* why) {
    if (text == "all") {
        for (int r = 0; r < nranks; ++r) {
            out->push_back(r);
        }
        return true;
    }
    size_t at = 0;
    while (at <= text.size() && out->size() < max_query_ranks) {
        size_t end   = text.find(',', at);
        end          = end == std::string::npos ? text.size() : end;
        int r        = -1;
        auto [p, ec] = std::from_chars(text.data() + at, text.data() + end, r);
        if (ec != std::errc() || p != text.data() + end || r < 0 || r >= nranks) {
            *why = "ranks must be 'all' or a list of ranks 0.." + std::to_string(nranks - 1) +
                   " separated by commas";
            return false;
        }
        out->push_back(r);
        at = end + 1;
    }
    return true;
}

json tree_json(const aggregation_tree& t) {
    json nodes = json::array();
    for (const tree_node& n : t.nodes) {
        nodes.push_back({{"id", n.id},
                         {"parent", n.parent},
                         {"level", n.level},
                         {"children", n.children},
                         {"ranks", n.ranks}});
    }
    return {{"root", t.root}, {"as_declared", t.as_declared}, {"ranks", t.ranks}, {"nodes", nodes}};
}

void show_trees(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    const topology::fabric* f = held_fabric(ctl, res);
    if (f == nullptr) {
        return;
    }
    tree_plan plan = plan_trees(*f, ctl.out_of_service());
    json trees     = json::array();
    for (const aggregation_tree& t : plan.trees) {
        trees.push_back(tree_json(t));
    }
    json cut = json::array();
    for (const cut_rank& c : plan.cut) {
        cut.push_back({{"rank", c.rank}, {"because", c.because}});
    }
    json body = {{"in_network_nodes", plan.in_network_nodes}, {"trees", trees}, {"cut", cut}};
    if (req.has_param("ranks")) {
        std::vector<int> ranks;
        std::string why;
        if (!read_ranks(req.get_param_value("ranks"), f->nranks(), &ranks, &why)) {
            refuse(res, 400, why);
            return;
        }
        const aggregation_tree* t = tree_for_ranks(plan, ranks, &why);
        body["for_ranks"]         = t != nullptr ? json{{"usable", true}, {"root", t->root}}
                                                 : json{{"usable", false}, {"why", why}};
    }
    reply(res, 200, body);
}

}  // namespace

void install_fabric_api(httplib::Server& server, controller& ctl) {
    server.Get("/v1/fabric", guarded(ctl, [&ctl](const httplib::Request&, httplib::Response& res) {
                   show_fabric(ctl, res);
               }));
    allow_only(server, ctl, "/v1/fabric", "GET");
    server.Get("/v1/routes",
               guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                   show_route(ctl, req, res);
               }));
    allow_only(server, ctl, "/v1/routes", "GET");
    server.Get(R"(/v1/routes/([A-Za-z0-9._:-]+))",
               guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                   show_table(ctl, req, res);
               }));
    allow_only(server, ctl, R"(/v1/routes/([A-Za-z0-9._:-]+))", "GET");
    server.Get("/v1/trees",
               guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                   show_trees(ctl, req, res);
               }));
    allow_only(server, ctl, "/v1/trees", "GET");
}

}  // namespace loom::ctld
