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

// Rows under a header row, columns aligned two spaces apart.
std::string aligned(const std::vector<std::vector<std::string>>& rows) {
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
    return out;
}

std::string joined(const json& list) {
    if (!list.is_array() || list.empty()) {
        return "-";
    }
    std::string out;
    for (const json& v : list) {
        out += (out.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
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
        std::string state = text_of(m, "state");
        if (m.value("drained", false)) {
            state += ",drained";
        }
        rows.push_back({text_of(m, "id"), text_of(m, "name"), text_of(m, "kind"), state,
                        text_of(m, "last_heartbeat_s"), joined(m.value("addresses", json()))});
    }
    std::string out = aligned(rows);
    if (list.empty()) {
        out += "(no members)\n";
    }
    return out;
}

std::string route_text(const json& route) {
    std::string out = text_of(route, "from") + " -> " + text_of(route, "to");
    if (route.contains("why")) {
        return out + ": unreachable: " + text_of(route, "why") + "\n";
    }
    out += ": " + text_of(route, "hops") + " hops, " + text_of(route, "how") + "\n";
    std::vector<std::vector<std::string>> rows = {{"HOP", "FROM", "TO", "PORT", "DIM", "VC"}};
    int hop                                    = 0;
    for (const json& s : route.value("steps", json::array())) {
        rows.push_back({std::to_string(++hop), text_of(s, "from"), text_of(s, "to"),
                        text_of(s, "port"), text_of(s, "dim"), text_of(s, "vc")});
    }
    if (hop > 0) {
        out += aligned(rows);
    }
    for (const json& b : route.value("blocked", json::array())) {
        out += "blocked: " + (b.is_string() ? b.get<std::string>() : b.dump()) + "\n";
    }
    return out;
}

std::string route_table_text(const json& table) {
    std::vector<std::vector<std::string>> rows = {{"RANK", "NEXT", "PORT", "DIM", "VC_RULE"}};
    for (const json& e : table.value("entries", json::array())) {
        std::string next = e.value("reachable", true) ? text_of(e, "next") : "(unreachable)";
        rows.push_back({text_of(e, "rank"), next.empty() ? "(self)" : next, text_of(e, "port"),
                        text_of(e, "dim"), text_of(e, "vc_rule")});
    }
    return "route table of " + text_of(table, "node") + "\n" + aligned(rows);
}

std::string trees_text(const json& answer) {
    std::string out;
    const json trees = answer.value("trees", json::array());
    for (const json& t : trees) {
        out += "tree " + text_of(t, "root") +
               (t.value("as_declared", true) ? "" : " (recomputed: not as the fabric declares)") +
               ", ranks " + joined(t.value("ranks", json())) + "\n";
        for (const json& n : t.value("nodes", json::array())) {
            out += std::string(2 + 2 * size_t(std::max(0, n.value("level", 0))), ' ') +
                   text_of(n, "id");
            if (!n.value("ranks", json::array()).empty()) {
                out += "  ranks " + joined(n["ranks"]);
            }
            out += "\n";
        }
    }
    if (trees.empty()) {
        out += "(no trees: " + text_of(answer, "in_network_nodes") + " in-network nodes)\n";
    }
    for (const json& c : answer.value("cut", json::array())) {
        out += "cut: rank " + text_of(c, "rank") + ": " + text_of(c, "because") + "\n";
    }
    if (answer.contains("for_ranks")) {
        const json& f = answer["for_ranks"];
        out += f.value("usable", false)
                   ? "these ranks reduce in tree " + text_of(f, "root") + "\n"
                   : "these ranks cannot reduce in one tree: " + text_of(f, "why") + "\n";
    }
    return out;
}

std::string slots_table(const json& slots) {
    std::vector<std::vector<std::string>> rows{
        {"NAME", "KIND", "STATE", "CAPACITY", "USED", "FREE", "JOBS"}};
    for (const json& n : slots.value("nodes", json::array())) {
        std::string state = text_of(n, "state");
        if (n.value("drained", false)) {
            state += ",drained";
        }
        std::string jobs;
        for (const json& j : n.value("jobs", json::array())) {
            jobs += (jobs.empty() ? "" : ",") + text_of(j, "job") + ":" + text_of(j, "slots");
        }
        rows.push_back({text_of(n, "name"), text_of(n, "kind"), state, text_of(n, "capacity"),
                        text_of(n, "used"), text_of(n, "free"), jobs.empty() ? "-" : jobs});
    }
    std::string quota = text_of(slots, "quota");
    return aligned(rows) + "quota per job: " + (quota == "0" ? "none" : quota + " slots") + "\n";
}

std::string jobs_table(const json& jobs) {
    std::vector<std::vector<std::string>> rows{{"JOB", "ALLOCATIONS", "REVOKED", "SLOTS", "COMMS"}};
    for (const json& j : jobs.value("jobs", json::array())) {
        rows.push_back({text_of(j, "job"), text_of(j, "allocations"), text_of(j, "revoked"),
                        text_of(j, "slots"), joined(j.value("comms", json::array()))});
    }
    return aligned(rows);
}

}  // namespace loom::ctl_tool
