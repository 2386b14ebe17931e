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

}  // namespace loom::ctl_tool
