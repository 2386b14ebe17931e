// SPDX-License-Identifier: Apache-2.0
// loomctl's tables: the controller's answers as people read them. Fields a newer controller
// adds are ignored, fields an older one lacks print as "-".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace loom::ctl_tool {

/// `loomctl status`: one "key: value" line per field.
std::string status_table(const nlohmann::json& status);
/// `loomctl members`: one row per member under a header, columns aligned.
std::string members_table(const nlohmann::json& members);
/// `loomctl routes A B`: how, then one line per hop with its port and VC; blocked nodes.
std::string route_text(const nlohmann::json& route);
/// `loomctl routes A --table`: one row per destination rank.
std::string route_table_text(const nlohmann::json& table);
/// `loomctl trees`: each tree indented by level, with the ranks under each node; cut ranks.
std::string trees_text(const nlohmann::json& trees);
/// `loomctl slots`: one row per in-network member: capacity, used, free, by which jobs.
std::string slots_table(const nlohmann::json& slots);
/// `loomctl jobs`: one row per job holding allocations: communicators, slots, revoked ones.
std::string jobs_table(const nlohmann::json& jobs);

}  // namespace loom::ctl_tool
