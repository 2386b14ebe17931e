// SPDX-License-Identifier: Apache-2.0
// loomctl's tables (render.hh).
#include "render.hh"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace loom::ctl_tool {
namespace {

using json = nlohmann::json;

std::string text_of(const json& object, const char* key) {
    if (!object.is_object() || !object.contains(key)) {
        return "-";
    }
    const json& v = object[key];
    if (v.is_string()) {
        return v.get<std::string>();
    }
    if (v.is_number_float()) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f", v.get<double>());
        return text;
    }
    return v.dump();
}

std::string addresses_text(const json& member) {
    if (!member.contains("addresses") || !member["addresses"].is_array() ||
        member["addresses"].empty()) {
        return "-";
    }
    std::string out;
    for (const json& a : member["addresses"]) {
        out += (out.empty() ? "" : ",") + (a.is_string() ? a.get<std::string>() : a.dump());
    }
    return out;
}

}  // namespace

std::string status_table(const json& status) {
    const json members = status.value("members", json::object());
    std::string out;
    auto line = [&](const char* key, const std::string& value) {
        out += std::string(key) + ": " + value + "\n";
    };
    line("version", text_of(status, "version"));
    line("api", text_of(status, "api"));
    line("uptime_s", text_of(status, "uptime_s"));
    line("heartbeat_ms", text_of(status, "heartbeat_ms"));
    std::string state_file = text_of(status, "state_file");
    line("state_file", state_file.empty() ? "(none: memory only)" : state_file);
    line("members", text_of(members, "total") + " (up " + text_of(members, "up") + ", down " +
                        text_of(members, "down") + "; host " + text_of(members, "host") + ", dpu " +
                        text_of(members, "dpu") + ", switch " + text_of(members, "switch") + ")");
    return out;
}

std::string members_table(const json& answer) {
    std::vector<std::vector<std::string>> rows = {
        {"ID", "NAME", "KIND", "STATE", "LAST_HEARTBEAT_S", "ADDRESSES"}};
    const json list = answer.value("members", json::array());
    for (const json& m : list) {
        rows.push_back({text_of(m, "id"), text_of(m, "name"), text_of(m, "kind"),
                        text_of(m, "state"), text_of(m, "last_heartbeat_s"), addresses_text(m)});
    }
    std::vector<size_t> width(rows[0].size(), 0);
    for (const auto& row : rows) {
        for (size_t c = 0; c < row.size(); ++c) {
            width[c] = std::max(width[c], row[c].size());
        }
    }
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c) {
            line += row[c];
            if (c + 1 < row.size()) {
                line += std::string(width[c] - row[c].size() + 2, ' ');
            }
        }
        out += line + "\n";
    }
    if (list.empty()) {
        out += "(no members)\n";
    }
    return out;
}

}  // namespace loom::ctl_tool
