// SPDX-License-Identifier: Apache-2.0
// What every part of the API shares (api_common.hh).
#include "api_common.hh"

#include <charconv>
#include <string_view>

#include "controller.hh"

namespace loom::ctld {
namespace {
constexpr const char* json_type = "application/json";
}  // namespace

void reply(httplib::Response& res, int http_status, const json& body) {
    res.status = http_status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", json_type);
}

void refuse(httplib::Response& res, int http_status, const std::string& reason) {
    reply(res, http_status, {{"error", reason}});
}

bool parse_object(const httplib::Request& req, httplib::Response& res, json* out) {
    *out = json::parse(req.body, nullptr, false);
    if (out->is_discarded()) {
        refuse(res, 400, "the body is not JSON");
        return false;
    }
    if (!out->is_object()) {
        refuse(res, 400, "the body must be a JSON object");
        return false;
    }
    return true;
}

bool path_id(const httplib::Request& req, uint64_t* id) {
    const std::string& text = req.matches[1].str();
    auto [end, ec]          = std::from_chars(text.data(), text.data() + text.size(), *id);
    return ec == std::errc() && end == text.data() + text.size();
}

bool lease_request(const httplib::Request& req, httplib::Response& res, const char* what,
                   const char* granted_by, uint64_t* id, std::string* lease) {
    constexpr size_t max_lease_bytes = 128;
    if (!path_id(req, id)) {
        refuse(res, 404, std::string("no ") + what + " " + req.matches[1].str());
        return false;
    }
    json body;
    if (!parse_object(req, res, &body)) {
        return false;
    }
    auto l = body.find("lease");
    if (l == body.end() || !l->is_string() ||
        l->get_ref<const std::string&>().size() > max_lease_bytes) {
        refuse(res, 400,
               std::string("missing field 'lease' (the lease id the ") + granted_by + " returned)");
        return false;
    }
    *lease = l->get<std::string>();
    return true;
}

bool admitted(controller& ctl, const httplib::Request& req, httplib::Response& res) {
    if (!ctl.limiter().allow(req.remote_addr)) {
        res.set_header("Retry-After", "1");
        refuse(res, 429, "too many requests from " + req.remote_addr + " (--rate)");
        return false;
    }
    constexpr std::string_view scheme = "Bearer ";
    std::string header                = req.get_header_value("Authorization");
    if (header.size() <= scheme.size() ||
        std::string_view(header).substr(0, scheme.size()) != scheme ||
        !ctl.token_matches(std::string_view(header).substr(scheme.size()))) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"loom-ctld\"");
        refuse(res, 401,
               header.empty() ? "no bearer token (Authorization: Bearer TOKEN)"
                              : "wrong bearer token");
        return false;
    }
    return true;
}

handler guarded(controller& ctl, handler serve) {
    return [&ctl, serve = std::move(serve)](const httplib::Request& req, httplib::Response& res) {
        if (admitted(ctl, req, res)) {
            serve(req, res);
        }
    };
}

void allow_only(httplib::Server& server, controller& ctl, const std::string& pattern,
                const std::string& allowed) {
    handler wrong = guarded(ctl, [allowed](const httplib::Request& req, httplib::Response& res) {
        res.set_header("Allow", allowed);
        refuse(res, 405,
               req.method + " is not allowed on " + req.path + " (allowed: " + allowed + ")");
    });
    std::string_view a = allowed;
    if (a.find("GET") == std::string_view::npos) {
        server.Get(pattern, wrong);
    }
    if (a.find("POST") == std::string_view::npos) {
        server.Post(pattern, wrong);
    }
    if (a.find("DELETE") == std::string_view::npos) {
        server.Delete(pattern, wrong);
    }
    server.Put(pattern, wrong);
    server.Patch(pattern, wrong);
    server.Options(pattern, wrong);
}

}  // namespace loom::ctld
