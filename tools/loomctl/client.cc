// SPDX-License-Identifier: Apache-2.0
// Requests to loom-ctld (client.hh).
#include "client.hh"

#include <httplib.h>

#include <cctype>

namespace loom::ctl_tool {
namespace {

std::string failure_text(httplib::Error e) {
    switch (e) {
        case httplib::Error::Connection:
            return "cannot connect (is loom-ctld running there?)";
        case httplib::Error::ConnectionTimeout:
            return "no answer to the connection (--timeout)";
        case httplib::Error::Read:
            return "no answer (it closed the connection or --timeout passed)";
        case httplib::Error::Write:
            return "cannot send the request";
        default:
            return httplib::to_string(e);
    }
}

// One request: GET when `payload` is null, else POST of it.
result<nlohmann::json> request(const options& o, const std::string& token, const std::string& path,
                               const nlohmann::json* payload) {
    httplib::Client client(o.where.host, o.where.port);
    auto seconds = time_t(o.timeout_s);
    auto micros  = time_t((o.timeout_s - double(seconds)) * 1e6);
    client.set_connection_timeout(seconds, micros);
    client.set_read_timeout(seconds, micros);
    client.set_write_timeout(seconds, micros);
    client.set_keep_alive(false);
    client.set_tcp_nodelay(true);  // header and body at once: no wait for the delayed ACK
    httplib::Headers headers = {{"Authorization", "Bearer " + token}};
    auto answer              = payload == nullptr
                                   ? client.Get(path, headers)
                                   : client.Post(path, headers, payload->dump(), "application/json");
    std::string where        = "the controller at " + o.controller;
    if (!answer) {
        return system_error(where + ": " + failure_text(answer.error()));
    }
    auto body = nlohmann::json::parse(answer->body, nullptr, false);
    if (answer->status != 200) {
        std::string reason = body.is_object() && body.contains("error") && body["error"].is_string()
                                 ? body["error"].get<std::string>()
                                 : answer->reason;
        return not_applicable(where + " refused " + path + " (HTTP " +
                              std::to_string(answer->status) + "): " + reason);
    }
    if (body.is_discarded() || !body.is_object()) {
        return parse_error(where + " answered " + path +
                           " with something that is not a JSON "
                           "object (is it loom-ctld?)");
    }
    return body;
}

}  // namespace

result<nlohmann::json> get_json(const options& o, const std::string& token,
                                const std::string& path) {
    return request(o, token, path, nullptr);
}

result<nlohmann::json> post_json(const options& o, const std::string& token,
                                 const std::string& path, const nlohmann::json& body) {
    return request(o, token, path, &body);
}

std::string query_escape(const std::string& text) {
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += char(c);
        } else {
            out += {'%', hex[c >> 4], hex[c & 15]};
        }
    }
    return out;
}

}  // namespace loom::ctl_tool
