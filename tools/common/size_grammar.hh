// SPDX-License-Identifier: Apache-2.0
// The one size grammar of loom's tools (loom-bench -b/-e, loom-sim --bytes/--count): a
// whole number of bytes, optionally with a unit. K, M, G, T and KiB, MiB, GiB, TiB are
// 1024-based, as nccl-tests reads "-b 1K" and users paste its size lists; KB, MB, GB, TB are
// 1000-based, as the SI prefixes say; a bare trailing B means bytes. Units are
// case-insensitive ("1k", "1kib").
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.hh"

namespace loom::tools {

/// What --help says about sizes (one line).
inline constexpr const char* size_grammar_help =
    "bytes, or K/M/G/T (1024-based, also KiB...), KB/MB/GB/TB (1000-based)";

/// The largest size accepted: far beyond any buffer, still exact in int64.
inline constexpr int64_t max_size_bytes = int64_t{1} << 62;

/// `text` as bytes; on bad input an invalid_argument naming `flag` and what is allowed.
/// Whole and non-negative ("1.5K" is 1536 bytes; "0.5" is refused).
result<int64_t> parse_size(std::string_view flag, std::string_view text);

}  // namespace loom::tools
