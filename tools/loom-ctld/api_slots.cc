// SPDX-License-Identifier: Apache-2.0
// The in-network slots' paths of API v1 (api_slots.hh).
#include "api_slots.hh"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api_common.hh"
#include "controller.hh"

namespace loom::ctld {

using namespace loom::control;  // what this file serves
namespace {

constexpr size_t max_name_bytes = 128;
constexpr size_t max_nodes      = 1024;
constexpr size_t max_ranks      = 1 << 20;
constexpr uint64_t max_slots    = 1 << 20;

bool good_name(const std::string& s) {
    return !s.empty() && s.size() <= max_name_bytes && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-' || c == ':';
    });
}

// A name field of the body, or the reason it is refused.
std::string read_name(const json& body, const char* key, std::string* out) {
    auto it = body.find(key);
    if (it == body.end() || !it->is_string() || !good_name(it->get<std::string>())) {
        return std::string("missing field '") + key + "' (1 to " + std::to_string(max_name_bytes) +
               " letters, digits and . _ - :)";
    }
    *out = it->get<std::string>();
    return "";
}

// The ranks of a grant ("all" or an array of distinct ranks of the fabric), or why not.
std::string read_ranks(const json& j, int nranks, std::vector<int>* out) {
    if (j.is_string() && j.get<std::string>() == "all") {
        for (int r = 0; r < nranks; ++r) {
            out->push_back(r);
        }
        return "";
    }
    if (!j.is_array() || j.empty() || j.size() > max_ranks) {
        return "'ranks' must be \"all\" or an array of ranks";
    }
    std::set<int> seen;
    for (const json& r : j) {
        if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= nranks ||
            !seen.insert(int(r.get<int64_t>())).second) {
            return "'ranks' must be distinct ranks 0.." + std::to_string(nranks - 1) +
                   " of the fabric";
        }
        out->push_back(int(r.get<int64_t>()));
    }
    return "";
}

// The aggregation nodes a communicator over `ranks` uses in `t`: each node a rank hangs off
// and its ancestors up to the root, root first (the tree's own order). Nodes of the tree that
// none of these ranks reaches are left out: they take no part in this reduction.
std::vector<std::string> nodes_for(const aggregation_tree& t, const std::vector<int>& ranks) {
    std::map<std::string, const tree_node*> by_id;
    for (const tree_node& n : t.nodes) {
        by_id[n.id] = &n;
    }
    std::set<int> wanted(ranks.begin(), ranks.end());
    std::set<std::string> used;
    for (const tree_node& n : t.nodes) {
        bool holds =
            std::any_of(n.ranks.begin(), n.ranks.end(), [&](int r) { return wanted.count(r) > 0; });
        for (const tree_node* at = holds ? &n : nullptr;
             at != nullptr && used.insert(at->id).second;
             at = at->parent.empty() ? nullptr : by_id[at->parent]) {
        }
    }
    std::vector<std::string> out;
    for (const tree_node& n : t.nodes) {
        if (used.count(n.id) > 0) {
            out.push_back(n.id);
        }
    }
    return out;
}

// The grant's fields; the nodes from the body or from the tree over the ranks. A tree that
// cannot be had is not a bad request: it is left to the grant to refuse (no_tree, *tree_why).
std::string read_grant(controller& ctl, const json& body, grant_request* out,
                       std::string* tree_why) {
    if (std::string why = read_name(body, "job", &out->job); !why.empty()) {
        return why;
    }
    if (std::string why = read_name(body, "comm", &out->comm); !why.empty()) {
        return why;
    }
    if (auto s = body.find("slots"); s != body.end()) {
        if (!s->is_number_unsigned() || s->get<uint64_t>() < 1 || s->get<uint64_t>() > max_slots) {
            return "'slots' must be 1 to " + std::to_string(max_slots) + " (slots per node)";
        }
        out->slots = uint32_t(s->get<uint64_t>());
    }
    auto nodes = body.find("nodes");
    auto ranks = body.find("ranks");
    if ((nodes == body.end()) == (ranks == body.end())) {
        return "give either 'ranks' (\"all\" or an array: the controller finds their tree) or "
               "'nodes' (the aggregation nodes' names), not both";
    }
    if (nodes != body.end()) {
        if (!nodes->is_array() || nodes->size() > max_nodes) {
            return "'nodes' must be an array of at most " + std::to_string(max_nodes) + " names";
        }
        std::set<std::string> seen;
        for (const json& n : *nodes) {
            if (!n.is_string() || !good_name(n.get<std::string>()) ||
                !seen.insert(n.get<std::string>()).second) {
                return "'nodes' must hold distinct member names";
            }
            out->nodes.push_back(n.get<std::string>());
        }
        return "";
    }
    const topology::fabric* f = ctl.fabric();
    if (f == nullptr) {
        return "'ranks' needs a controller started with --fabric (or give 'nodes')";
    }
    std::vector<int> wanted;
    if (std::string why = read_ranks(*ranks, f->nranks(), &wanted); !why.empty()) {
        return why;
    }
    tree_plan plan            = plan_trees(*f, ctl.out_of_service());
    const aggregation_tree* t = tree_for_ranks(plan, wanted, tree_why);
    if (t != nullptr) {
        out->nodes = nodes_for(*t, wanted);
    }
    return "";
}

void grant(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!parse_object(req, res, &body)) {
        return;
    }
    grant_request request;
    std::string tree_why;
    if (std::string why = read_grant(ctl, body, &request, &tree_why); !why.empty()) {
        refuse(res, 400, why);
        return;
    }
    auto got = ctl.grant(request);
    if (!got) {
        refuse(res, 500, got.error().message());
        return;
    }
    if (got->refusal != slot_refusal::none) {
        std::string why = got->refusal == slot_refusal::no_tree && !tree_why.empty()
                              ? "no in-network tree for these ranks: " + tree_why
                              : got->why;
        reply(res, 409,
              {{"error", why},
               {"granted", false},
               {"refusal", slot_refusal_name(got->refusal)},
               {"job", request.job},
               {"comm", request.comm}});
        return;
    }
    const allocation& a = got->granted;
    reply(res, 201,
          {{"id", a.id},
           {"granted", true},
           {"lease", a.lease},
           {"job", a.job},
           {"comm", a.comm},
           {"nodes", a.nodes},
           {"slots", a.slots},
           {"heartbeat_ms", ctl.heartbeat_ms()}});
}

json allocation_json(const allocation& a, steady::time_point now) {
    json j = {{"id", a.id},
              {"job", a.job},
              {"comm", a.comm},
              {"nodes", a.nodes},
              {"slots", a.slots},
              {"state", allocation_state_name(a.state)},
              {"granted_unix_s", a.granted_unix_s},
              {"last_renewal_s", std::chrono::duration<double>(now - a.last_renewal).count()},
              {"renewals", a.renewals}};
    if (a.state == allocation_state::revoked) {
        j["revoked_because"] = a.revoked_because;
    }
    return j;
}

void list_allocations(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    std::string job = req.has_param("job") ? req.get_param_value("job") : "";
    auto now        = steady::now();
    json list       = json::array();
    for (const allocation& a : ctl.slots().snapshot()) {
        if (job.empty() || a.job == job) {
            list.push_back(allocation_json(a, now));
        }
    }
    reply(res, 200,
          {{"quota", ctl.slots().quota()},
           {"heartbeat_ms", ctl.heartbeat_ms()},
           {"allocations", list}});
}

void renew(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    uint64_t id = 0;
    std::string lease;
    if (!lease_request(req, res, "allocation", "grant", &id, &lease)) {
        return;
    }
    std::string why;
    switch (ctl.slots().renew(id, lease, &why)) {
        case renew_refusal::none:
            ctl.stats().renewals.fetch_add(1, std::memory_order_relaxed);
            reply(res, 200,
                  {{"id", id}, {"state", "active"}, {"heartbeat_ms", ctl.heartbeat_ms()}});
            return;
        case renew_refusal::unknown:
            refuse(res, 404,
                   "no allocation " + std::to_string(id) +
                       " (released, or its lease ran out: three periods without a renewal)");
            return;
        case renew_refusal::stale_lease:
            refuse(res, 410, "lease is not allocation " + std::to_string(id) + "'s lease");
            return;
        case renew_refusal::revoked:
            reply(res, 410,
                  {{"error", "allocation " + std::to_string(id) + " is revoked: " + why},
                   {"state", "revoked"},
                   {"revoked_because", why}});
            return;
    }
}

void release(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    uint64_t id = 0;
    if (!path_id(req, &id) || !ctl.slots().release(id)) {
        refuse(res, 404, "no allocation " + req.matches[1].str());
        return;
    }
    if (status st = ctl.persist(); !st) {
        refuse(res, 500, st.message());
        return;
    }
    ctl.stats().allocations_released.fetch_add(1);
    reply(res, 200, {{"id", id}, {"released", true}});
}

void list_slots(controller& ctl, httplib::Response& res) {
    auto used  = ctl.slots().used_by_node();
    json nodes = json::array();
    for (const member& m : ctl.members().snapshot()) {
        if (m.kind == member_kind::host) {
            continue;
        }
        uint64_t in_use = 0;
        json jobs       = json::array();
        for (const auto& [job, slots] : used[m.name]) {
            in_use += slots;
            jobs.push_back({{"job", job}, {"slots", slots}});
        }
        nodes.push_back({{"name", m.name},
                         {"kind", kind_name(m.kind)},
                         {"state", state_name(m.state)},
                         {"drained", m.drained},
                         {"capacity", m.slots},
                         {"used", in_use},
                         {"free", in_use >= m.slots ? 0 : m.slots - in_use},
                         {"jobs", jobs}});
    }
    reply(res, 200, {{"quota", ctl.slots().quota()}, {"nodes", nodes}});
}

void list_jobs(controller& ctl, httplib::Response& res) {
    std::map<std::string, json> by_job;
    for (const allocation& a : ctl.slots().snapshot()) {
        json& j = by_job[a.job];
        if (j.is_null()) {
            j = {{"job", a.job}, {"allocations", 0}, {"active", 0},
                 {"revoked", 0}, {"slots", 0},       {"comms", json::array()}};
        }
        bool active                      = a.state == allocation_state::active;
        j["allocations"]                 = j["allocations"].get<uint64_t>() + 1;
        j[active ? "active" : "revoked"] = j[active ? "active" : "revoked"].get<uint64_t>() + 1;
        if (active) {
            j["slots"] = j["slots"].get<uint64_t>() + uint64_t(a.slots) * a.nodes.size();
        }
        j["comms"].push_back(a.comm);
    }
    json jobs = json::array();
    for (auto& [name, j] : by_job) {
        jobs.push_back(std::move(j));
    }
    reply(res, 200, {{"quota", ctl.slots().quota()}, {"jobs", jobs}});
}

}  // namespace

void install_slots_api(httplib::Server& server, controller& ctl) {
    server.Post("/v1/allocations",
                guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                    grant(ctl, req, res);
                }));
    server.Get("/v1/allocations",
               guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                   list_allocations(ctl, req, res);
               }));
    allow_only(server, ctl, "/v1/allocations", "GET, POST");
    server.Post(R"(/v1/allocations/(\d+)/renew)",
                guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                    renew(ctl, req, res);
                }));
    allow_only(server, ctl, R"(/v1/allocations/(\d+)/renew)", "POST");
    server.Delete(R"(/v1/allocations/(\d+))",
                  guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                      release(ctl, req, res);
                  }));
    allow_only(server, ctl, R"(/v1/allocations/(\d+))", "DELETE");
    server.Get("/v1/slots", guarded(ctl, [&ctl](const httplib::Request&, httplib::Response& res) {
                   list_slots(ctl, res);
               }));
    allow_only(server, ctl, "/v1/slots", "GET");
    server.Get("/v1/jobs", guarded(ctl, [&ctl](const httplib::Request&, httplib::Response& res) {
                   list_jobs(ctl, res);
               }));
    allow_only(server, ctl, "/v1/jobs", "GET");
}

}  // namespace loom::ctld
