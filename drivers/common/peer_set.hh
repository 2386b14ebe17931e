// SPDX-License-Identifier: Apache-2.0
// The ranks a connecting endpoint reaches: endpoint_config::peers checked and expanded
// (empty: every other rank), for the drivers that connect peer by peer (tcp, ofi, verbs).
#pragma once

#include <string_view>
#include <vector>

#include "base/status.hh"
#include "drivers/driver.hh"

namespace loom::drivers::common {

/// The peers of `config` in rank order, or invalid_argument naming a listed rank that is
/// not another rank of the job (`driver` opens the message, as each driver's messages do).
result<std::vector<int>> peer_set(const endpoint_config& config, std::string_view driver);

}  // namespace loom::drivers::common
