// SPDX-License-Identifier: Apache-2.0
// The routes of API v1 (api.hh).
#include "api.hh"

#include <string>

#include "api_common.hh"
#include "api_fabric.hh"
#include "api_slots.hh"
#include "controller.hh"

namespace loom::ctld {

using namespace loom::control;  // the table this file serves
namespace {

constexpr size_t max_name_bytes     = 128;
constexpr size_t max_address_bytes  = 256;
constexpr size_t max_addresses      = 64;
constexpr uint64_t max_member_slots = 1 << 20;

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == ':';
}

// The join's fields, or the reason they are refused.
std::string read_join(const json& body, join_request* out) {
    auto name = body.find("name");
    if (name == body.end() || !name->is_string()) {
        return "missing field 'name' (a string)";
    }
    out->name = name->get<std::string>();
    if (out->name.empty() || out->name.size() > max_name_bytes) {
        return "'name' must have 1 to " + std::to_string(max_name_bytes) + " characters";
    }
    for (char c : out->name) {
        if (!name_char(c)) {
            return "'name' may hold only letters, digits and . _ - :";
        }
    }
    auto kind = body.find("kind");
    if (kind == body.end() || !kind->is_string()) {
        return "missing field 'kind' (host, dpu or switch)";
    }
    auto k = kind_from_name(kind->get<std::string>());
    if (!k) {
        return "'kind' must be host, dpu or switch";
    }
    out->kind      = *k;
    auto addresses = body.find("addresses");
    if (addresses == body.end() || !addresses->is_array()) {
        return "missing field 'addresses' (an array of strings)";
    }
    if (addresses->size() > max_addresses) {
        return "at most " + std::to_string(max_addresses) + " addresses";
    }
    for (const json& a : *addresses) {
        if (!a.is_string() || a.get_ref<const std::string&>().empty() ||
            a.get_ref<const std::string&>().size() > max_address_bytes) {
            return "each address must be a string of 1 to " + std::to_string(max_address_bytes) +
                   " characters";
        }
        out->addresses.push_back(a.get<std::string>());
    }
    // A switch's or a DPU's in-network slots; a host has none (the field is ignored).
    out->slots = default_slots;
    if (auto slots = body.find("slots"); slots != body.end()) {
        if (!slots->is_number_unsigned() || slots->get<uint64_t>() > max_member_slots) {
            return "'slots' must be 0 to " + std::to_string(max_member_slots);
        }
        out->slots = uint32_t(slots->get<uint64_t>());
    }
    return "";
}

json member_json(const member& m, steady::time_point now) {
    double ago_s = std::chrono::duration<double>(now - m.last_heartbeat).count();
    return {{"id", m.id},
            {"name", m.name},
            {"kind", kind_name(m.kind)},
            {"state", state_name(m.state)},
            {"drained", m.drained},
            {"capacity", m.slots},  // in-network slots ("slots" at join)
            {"addresses", m.addresses},
            {"joined_unix_s", m.joined_unix_s},
            {"last_heartbeat_s", ago_s},
            {"heartbeats", m.heartbeats}};
}

void join(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!parse_object(req, res, &body)) {
        return;
    }
    join_request request;
    if (std::string why = read_join(body, &request); !why.empty()) {
        refuse(res, 400, why);
        return;
    }
    auto m = ctl.members().join(request);
    if (!m) {
        refuse(res, m.error().code() == LOOM_ERR_NOT_APPLICABLE ? 503 : 500, m.error().message());
        return;
    }
    // Answered only once on disk: a member told it joined is never lost by a restart.
    if (status st = ctl.persist(); !st) {
        refuse(res, 500, st.message());
        return;
    }
    ctl.stats().joins.fetch_add(1);
    reply(res, 201,
          {{"id", m->id},
           {"name", m->name},
           {"kind", kind_name(m->kind)},
           {"lease", m->lease},
           {"heartbeat_ms", ctl.heartbeat_ms()}});
}

void heartbeat(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    uint64_t id = 0;
    std::string lease;
    if (!lease_request(req, res, "member", "join", &id, &lease)) {
        return;
    }
    switch (ctl.members().heartbeat(id, lease)) {
        case lease_refusal::none:
            ctl.stats().heartbeats.fetch_add(1, std::memory_order_relaxed);
            reply(res, 200, {{"id", id}, {"state", "up"}, {"heartbeat_ms", ctl.heartbeat_ms()}});
            return;
        case lease_refusal::unknown_member:
            refuse(res, 404, "no member " + std::to_string(id) + ": join first");
            return;
        case lease_refusal::down:
            refuse(res, 410,
                   "member " + std::to_string(id) + " is down (its lease expired): join again");
            return;
        case lease_refusal::stale_lease:
            refuse(res, 410,
                   "lease is not member " + std::to_string(id) +
                       "'s current lease (it joined again): join again");
            return;
    }
}

void leave(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    uint64_t id = 0;
    if (!path_id(req, &id) || !ctl.members().leave(id)) {
        refuse(res, 404, "no member " + req.matches[1].str());
        return;
    }
    if (status st = ctl.persist(); !st) {
        refuse(res, 500, st.message());
        return;
    }
    ctl.stats().leaves.fetch_add(1);
    ctl.revoke_out();  // the allocations that used it learn it at their next renewal
    reply(res, 200, {{"id", id}, {"left", true}});
}

// POST /v1/members/ID/drain and /undrain: an operator takes a member out of service or
// back; routes and trees follow at once (they are computed per request).
void drain(controller& ctl, const httplib::Request& req, httplib::Response& res, bool drained) {
    uint64_t id = 0;
    if (!path_id(req, &id) || !ctl.members().set_drained(id, drained)) {
        refuse(res, 404, "no member " + req.matches[1].str());
        return;
    }
    if (status st = ctl.persist(); !st) {
        refuse(res, 500, st.message());
        return;
    }
    ctl.stats().drains.fetch_add(1, std::memory_order_relaxed);
    ctl.revoke_out();
    reply(res, 200, {{"id", id}, {"drained", drained}});
}

void list_members(controller& ctl, httplib::Response& res) {
    auto now     = steady::now();
    json members = json::array();
    for (const member& m : ctl.members().snapshot()) {
        members.push_back(member_json(m, now));
    }
    reply(res, 200, {{"heartbeat_ms", ctl.heartbeat_ms()}, {"members", members}});
}

void status_page(controller& ctl, httplib::Response& res) {
    json counts = {{"total", 0}, {"up", 0}, {"down", 0}};
    for (member_kind k : all_kinds) {
        counts[kind_name(k)] = 0;
    }
    for (const member& m : ctl.members().snapshot()) {
        counts["total"]             = counts["total"].get<int64_t>() + 1;
        counts[state_name(m.state)] = counts[state_name(m.state)].get<int64_t>() + 1;
        counts[kind_name(m.kind)]   = counts[kind_name(m.kind)].get<int64_t>() + 1;
    }
    reply(res, 200,
          {{"version", loom_version()},
           {"api", "v1"},
           {"uptime_s", ctl.uptime_s()},
           {"heartbeat_ms", ctl.heartbeat_ms()},
           {"state_file", ctl.config().state_file},
           {"members", counts}});
}

// Every answer of 400 or more passes here, whoever made it (a route, the checks above, the
// HTTP parser itself: a bad request line, a body over the limit, no such path): counted by
// reason, and given a one-line JSON reason when it has none. A path that matches no route
// is checked like the others first, so without the token it is a 401, not a 404.
httplib::Server::HandlerResponse on_error(controller& ctl, const httplib::Request& req,
                                          httplib::Response& res) {
    if (res.status == 404 && res.body.empty() && !admitted(ctl, req, res)) {
        ctl.stats().refuse(refusal_of_status(res.status));
        return httplib::Server::HandlerResponse::Handled;
    }
    ctl.stats().refuse(refusal_of_status(res.status));
    if (res.body.empty()) {
        std::string why;
        switch (res.status) {
            case 404:
                why = "no such path: " + req.path;
                break;
            case 413:
                why = "the body is over --max-body bytes";
                break;
            case 400:
                why = "malformed request";
                break;
            default:
                why = "refused (HTTP " + std::to_string(res.status) + ")";
                break;
        }
        refuse(res, res.status, why);
    }
    return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

void install_api(httplib::Server& server, controller& ctl) {
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [&ctl](const httplib::Request& req, httplib::Response& res) {
            return on_error(ctl, req, res);
        }));
    // Called once for every answer, the parser's own refusals included.
    server.set_logger([&ctl](const httplib::Request&, const httplib::Response&) {
        ctl.stats().requests.fetch_add(1, std::memory_order_relaxed);
    });
    server.Post("/v1/members",
                guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                    join(ctl, req, res);
                }));
    server.Get("/v1/members", guarded(ctl, [&ctl](const httplib::Request&, httplib::Response& res) {
                   list_members(ctl, res);
               }));
    allow_only(server, ctl, "/v1/members", "GET, POST");
    server.Post(R"(/v1/members/(\d+)/heartbeat)",
                guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                    heartbeat(ctl, req, res);
                }));
    allow_only(server, ctl, R"(/v1/members/(\d+)/heartbeat)", "POST");
    server.Delete(R"(/v1/members/(\d+))",
                  guarded(ctl, [&ctl](const httplib::Request& req, httplib::Response& res) {
                      leave(ctl, req, res);
                  }));
    allow_only(server, ctl, R"(/v1/members/(\d+))", "DELETE");
    for (bool drained : {true, false}) {
        std::string path = drained ? R"(/v1/members/(\d+)/drain)" : R"(/v1/members/(\d+)/undrain)";
        server.Post(path, guarded(ctl, [&ctl, drained](const httplib::Request& req,
                                                       httplib::Response& res) {
                        drain(ctl, req, res, drained);
                    }));
        allow_only(server, ctl, path, "POST");
    }
    server.Get("/v1/status", guarded(ctl, [&ctl](const httplib::Request&, httplib::Response& res) {
                   status_page(ctl, res);
               }));
    allow_only(server, ctl, "/v1/status", "GET");
    server.Get("/metrics", guarded(ctl, [&ctl](const httplib::Request&, httplib::Response& res) {
                   auto members = ctl.members().snapshot();
                   res.set_content(
                       metrics_text(ctl.stats(), members, ctl.uptime_s()) +
                           slot_metrics_text(ctl.stats(), members, ctl.slots().snapshot()),
                       "text/plain; version=0.0.4");
               }));
    allow_only(server, ctl, "/metrics", "GET");
    install_fabric_api(server, ctl);
    install_slots_api(server, ctl);
}

}  // namespace loom::ctld
