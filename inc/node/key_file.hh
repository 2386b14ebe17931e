// SPDX-License-Identifier: Apache-2.0
// The node key of an aggregation node (loom-switch, loom-dpu; inc/node/ticket.hh): read
// from a file only its owner can read, or created there with a fresh random key.
#pragma once

#include <string>

#include "base/status.hh"

namespace loom::inc {

/// The raw key bytes of `path`: 64 hex digits (then optional whitespace) in a regular file
/// owned by this user with no permission for group or others (0600 or 0400). With
/// `create`, a missing file is created (mode 0600) with a fresh key.
result<std::string> load_node_key(const std::string& path, bool create);

}  // namespace loom::inc
