// SPDX-License-Identifier: Apache-2.0
// One request to loom-ctld: its answer as JSON, or one line that says why there is none
// (unreachable, timed out, refused with the controller's reason). Every wait is bounded.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.hh"
#include "options.hh"

namespace loom::ctl_tool {

/// GET `path` from the controller of `o` with `token`.
result<nlohmann::json> get_json(const options& o, const std::string& token,
                                const std::string& path);
/// POST `body` to `path`.
result<nlohmann::json> post_json(const options& o, const std::string& token,
                                 const std::string& path, const nlohmann::json& body);
/// `text` as it may stand in a query (?from=…): letters, digits and -._~ as they are, every
/// other byte %XX.
std::string query_escape(const std::string& text);

}  // namespace loom::ctl_tool
