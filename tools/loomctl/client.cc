// SPDX-License-Identifier: Apache-2.0
// Requests to loom-ctld (client.hh).
#include "client.hh"

#include <httplib.h>

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

}  // namespace

result<nlohmann::json> get_json(const options& o, const std::string& token,
                                const std::string& path) {
    httplib::Client client(o.where.host, o.where.port);
    auto seconds = time_t(o.timeout_s);
    auto micros  = time_t((o.timeout_s - double(seconds)) * 1e6);
    client.set_connection_timeout(seconds, micros);
    client.set_read_timeout(seconds, micros);
    client.set_write_timeout(seconds, micros);
    client.set_keep_alive(false);
    httplib::Headers headers = {{"Authorization", "Bearer " + token}};
    auto answer              = client.Get(path, headers);
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

}  // namespace loom::ctl_tool
