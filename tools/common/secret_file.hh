// SPDX-License-Identifier: Apache-2.0
// A secret read from a file only its owner may read (the control plane's bearer token): a
// file others can read, or a link that could point anywhere, is refused rather than used.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.hh"

namespace loom::tools {

/// The shortest token accepted: a guessable one would make the check worthless.
constexpr size_t min_token_bytes = 16;
/// The longest: a token is a line, never a whole file someone pointed at by mistake.
constexpr size_t max_token_bytes = 4096;

/// The token in `path` (one line; trailing whitespace dropped). The file must be a regular
/// file of this user with no permission for group or others (0600 or 0400). Messages start
/// with `flag` and the path ("--token-file /x: ...") and say how to fix it.
result<std::string> read_token_file(const std::string& path, const std::string& flag);

}  // namespace loom::tools
